//! `FormBody`: a form post from a hosted page or a mail client, read as name–value pairs.
//! `application/x-www-form-urlencoded` is read as such; RFC 8058 allows `multipart/form-data`
//! for the one-click unsubscribe, whose simple text fields are read too.

use poem::{Request, RequestBody};
use poem_openapi::payload::{ParsePayload, Payload};
use poem_openapi::registry::{MetaMediaType, MetaRequest, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};
use std::collections::BTreeMap;

/// The fields of a posted form, in order.
pub struct FormBody(pub Vec<(String, String)>);

impl FormBody {
    /// Every value of the field `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0.iter().filter(move |(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The first value of the field `name`.
    pub fn first(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

impl Payload for FormBody {
    const CONTENT_TYPE: &'static str = "application/x-www-form-urlencoded";

    fn check_content_type(_content_type: &str) -> bool {
        true
    }

    fn schema_ref() -> MetaSchemaRef {
        BTreeMap::<String, String>::schema_ref()
    }

    fn register(registry: &mut Registry) {
        BTreeMap::<String, String>::register(registry);
    }
}

impl ParsePayload for FormBody {
    const IS_REQUIRED: bool = false;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let bytes = body.take().map(|b| b.into_bytes());
        let bytes = match bytes {
            Ok(reading) => reading.await.unwrap_or_default().to_vec(),
            Err(_) => Vec::new(),
        };
        let content_type = request.content_type().unwrap_or_default().to_ascii_lowercase();
        Ok(FormBody(match content_type.split_once("boundary=") {
            Some((kind, boundary)) if kind.starts_with("multipart/form-data") => multipart_fields(&bytes, boundary.trim_matches('"')),
            _ => form_urlencoded::parse(&bytes).into_owned().collect(),
        }))
    }
}

/// The text fields of a small `multipart/form-data` body.
fn multipart_fields(bytes: &[u8], boundary: &str) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(bytes);
    text.split(&format!("--{boundary}"))
        .filter_map(|part| {
            let (head, value) = part.split_once("\r\n\r\n")?;
            let name = head.split("name=\"").nth(1)?.split('"').next()?;
            Some((name.to_string(), value.trim_end_matches("\r\n").to_string()))
        })
        .collect()
}

impl<'a> ApiExtractor<'a> for FormBody {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        <Self as Payload>::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        Some(MetaRequest {
            description: None,
            content: vec![MetaMediaType { content_type: Self::CONTENT_TYPE, schema: Self::schema_ref() }],
            required: false,
        })
    }

    async fn from_request(request: &'a Request, body: &mut RequestBody, _param_opts: ExtractParamOptions<Self::ParamType>) -> poem::Result<Self> {
        <Self as ParsePayload>::from_request(request, body).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multipart_one_click_post_reads_as_its_field() {
        let body = b"--b1\r\nContent-Disposition: form-data; name=\"List-Unsubscribe\"\r\n\r\nOne-Click\r\n--b1--\r\n";
        assert_eq!(multipart_fields(body, "b1"), [("List-Unsubscribe".to_string(), "One-Click".to_string())]);
    }
}
