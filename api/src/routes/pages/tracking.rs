//! The tracking routes behind the links of tracked mail (the sending domain's open and click
//! tracking): a click redirects to the address the email held, an open answers a 1×1 GIF.
//! Neither reads the database: the signed token names the email (and the address), and the
//! hit goes to the tracking spool, which writes `email.opened` / `email.clicked` shortly after.

use crate::http::error::ApiResult;
use crate::routes::Tag;
use crate::state::AppState;
use poem::Request;
use poem::web::Data;
use poem_openapi::ApiResponse;
use poem_openapi::param::Path;
use poem_openapi::payload::{Binary, Html};
use schema::store::engagements::Hit;

pub struct TrackingApi;

/// A transparent 1×1 GIF.
const PIXEL: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0x21,
    0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44,
    0x01, 0x00, 0x3b,
];

/// The answer to a click.
#[derive(ApiResponse)]
pub enum ClickResponse {
    /// To the address as it was written in the email.
    #[oai(status = 302)]
    Found(
        #[oai(header = "location")] String,
        #[oai(header = "cache-control")] String,
        #[oai(header = "referrer-policy")] String,
    ),
    /// An unknown or altered link: nothing is recorded and nobody is sent anywhere.
    #[oai(status = 404)]
    NotFound(Html<String>, #[oai(header = "cache-control")] String),
}

/// The answer to an open.
#[derive(ApiResponse)]
pub enum OpenResponse {
    /// A transparent 1×1 GIF.
    #[oai(status = 200)]
    Ok(Binary<Vec<u8>>, #[oai(header = "content-type")] String, #[oai(header = "cache-control")] String),
    /// An unknown or altered link: nothing is recorded.
    #[oai(status = 404)]
    NotFound(Html<String>, #[oai(header = "cache-control")] String),
}

fn not_found() -> (Html<String>, String) {
    (Html(crate::routes::pages::html::not_found_page()), "no-store".into())
}

/// A hit on the link, with who followed it (document C's `ipAddress` and `userAgent`).
fn hit(request: &Request, email_id: uuid::Uuid, link: Option<String>) -> Hit {
    let (ip_address, user_agent) = crate::routes::pages::html::visitor(request);
    Hit { id: schema::ids::new_id(), email_id, link, ip_address, user_agent, at: chrono::Utc::now() }
}

#[poem_openapi::OpenApi(tag = "Tag::Pages")]
impl TrackingApi {
    /// A tracked link: records `email.clicked` and redirects (302) to the address the email
    /// held. The token is signed; an altered one answers 404 and records nothing.
    #[oai(path = "/click/:token", method = "get", operation_id = "track-click")]
    async fn click(&self, state: Data<&AppState>, request: &Request, token: Path<String>) -> ApiResult<ClickResponse> {
        let Some((email_id, url)) = schema::tracking::verify_click(&state.link_key, &token.0) else {
            let (page, cache) = not_found();
            return Ok(ClickResponse::NotFound(page, cache));
        };
        state.spool.push(hit(request, email_id, Some(url.clone()))).await;
        Ok(ClickResponse::Found(url, "no-store".into(), "no-referrer".into()))
    }

    /// The open pixel (`image/gif`): records `email.opened`.
    #[oai(path = "/open/:token", method = "get", operation_id = "track-open")]
    async fn open(&self, state: Data<&AppState>, request: &Request, token: Path<String>) -> ApiResult<OpenResponse> {
        let Some(email_id) = schema::tracking::verify_open(&state.link_key, &token.0) else {
            let (page, cache) = not_found();
            return Ok(OpenResponse::NotFound(page, cache));
        };
        state.spool.push(hit(request, email_id, None)).await;
        Ok(OpenResponse::Ok(Binary(PIXEL.to_vec()), "image/gif".into(), "no-store, private".into()))
    }
}
