//! Brand-kit images: uploaded as multipart, checked by their bytes (PNG, JPEG, GIF or WebP, at
//! most 2 MB), kept in PostgreSQL and served back byte-for-byte at a public Herald URL that
//! `brand_kit.logo_url` and templates can use.

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Required;
use crate::routes::Tag;
use crate::state::{AppState, Caller};
use chrono::{DateTime, Utc};
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::{Binary, Json, PlainText};
use poem_openapi::types::multipart::Upload;
use poem_openapi::{ApiResponse, Multipart, Object};
use schema::store::brand_assets;
use crate::routes::team::brand_kit::asset_url;

pub struct BrandAssetsApi;

/// Largest image accepted.
pub const MAX_IMAGE_BYTES: usize = 2 * 1024 * 1024;

/// The multipart form of `POST /team/brand-kit/uploads`.
#[derive(Multipart)]
pub struct UploadForm {
    /// The image: PNG, JPEG, GIF or WebP (read from its bytes, not its name), at most 2 MB.
    /// SVG is refused: it can carry scripts.
    pub file: Required<Upload>,
}

/// An uploaded image.
#[derive(Object)]
pub struct BrandAssetView {
    /// Always `brand_asset`.
    pub object: String,
    /// The image's id.
    pub id: String,
    /// The image's public address at Herald, ready for `brand_kit.logo_url` or a template.
    pub logo_url: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub content_type: String,
    /// Bytes.
    pub size: i32,
    /// When the image was uploaded.
    pub created_at: DateTime<Utc>,
}

#[derive(ApiResponse)]
pub enum UploadResponse {
    /// Stored.
    #[oai(status = 201)]
    Created(Json<BrandAssetView>),
}

#[derive(ApiResponse)]
pub enum AssetResponse {
    /// The image as uploaded.
    #[oai(status = 200)]
    Ok(
        Binary<Vec<u8>>,
        #[oai(header = "content-type")] String,
        #[oai(header = "cache-control")] String,
        #[oai(header = "x-content-type-options")] String,
        #[oai(header = "content-security-policy")] String,
    ),
    /// No such image.
    #[oai(status = 404)]
    NotFound(PlainText<String>),
}

#[poem_openapi::OpenApi(tag = "Tag::Team")]
impl BrandAssetsApi {
    /// Upload an image for the brand kit (multipart, field `file`). Answers its public
    /// `logo_url`; set it with `PATCH /team` to make it the logo.
    #[oai(path = "/team/brand-kit/uploads", method = "post", operation_id = "upload-brand-asset")]
    async fn upload(&self, state: Data<&AppState>, caller: Data<&Caller>, form: UploadForm) -> ApiResult<UploadResponse> {
        let upload = form.file.0.ok_or_else(|| ApiError::missing_field("file"))?;
        if upload.size() > MAX_IMAGE_BYTES {
            return Err(too_large());
        }
        let bytes = upload.into_vec().await.map_err(|_| ApiError::invalid_field("file", "could not be read"))?;
        if bytes.len() > MAX_IMAGE_BYTES {
            return Err(too_large());
        }
        let content_type = image_type(&bytes).ok_or_else(|| {
            ApiError::invalid_field("file", "must be a PNG, JPEG, GIF or WebP image (SVG is not accepted)")
        })?;
        let asset = brand_assets::insert(&mut *state.pool.acquire().await?, caller.team_id, content_type, &bytes).await?;
        Ok(UploadResponse::Created(Json(BrandAssetView {
            object: "brand_asset".into(),
            id: asset.id.to_string(),
            logo_url: asset_url(&state.config.public_url, asset.id),
            content_type: asset.content_type,
            size: asset.size,
            created_at: asset.created_at,
        })))
    }

    /// An uploaded brand image, byte-for-byte. Public, as images in email must be; the address
    /// is unguessable and never changes, so it may be cached for good.
    #[oai(path = "/brand-assets/:asset_id", method = "get", operation_id = "get-brand-asset", tag = "Tag::Pages")]
    async fn serve(&self, state: Data<&AppState>, asset_id: Path<String>) -> ApiResult<AssetResponse> {
        let found = match schema::ids::parse_id(&asset_id.0) {
            Some(id) => brand_assets::bytes(&mut *state.pool.acquire().await?, id).await?,
            None => None,
        };
        Ok(match found {
            Some((content_type, bytes)) => AssetResponse::Ok(
                Binary(bytes),
                content_type,
                "public, max-age=31536000, immutable".into(),
                "nosniff".into(),
                "default-src 'none'; sandbox".into(),
            ),
            None => AssetResponse::NotFound(PlainText("Not found".into())),
        })
    }
}

fn too_large() -> ApiError {
    ApiError::invalid_field("file", format!("must be at most {} MB", MAX_IMAGE_BYTES / (1024 * 1024)))
}

/// The image type read from the first bytes, or `None` for anything else.
fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_known_by_their_bytes_not_their_names() {
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(image_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(image_type(b"GIF89a.."), Some("image/gif"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>"), None);
        assert_eq!(image_type(b""), None);
    }
}
