//! A form with a file, passed on to an API route as `multipart/form-data`: the fields the
//! route takes, as they came (the file with its name), and the form's CSRF token kept aside.

use poem::web::Multipart;

/// The form's CSRF token, the multipart body (content type and bytes) holding the fields
/// named in `pass` (an empty file is left out, so the API says it is missing), and the other
/// text fields.
pub struct Relayed {
    pub csrf: String,
    pub payload: (String, Vec<u8>),
    pub others: super::kit::Fields,
}

/// Reads `multipart`, keeping the fields named in `pass` for the API.
pub async fn relay(mut multipart: Multipart, pass: &[&str]) -> poem::Result<Relayed> {
    let boundary = format!("herald-{}", uuid::Uuid::new_v4().simple());
    let mut body = Vec::new();
    let mut relayed = Relayed { csrf: String::new(), payload: (String::new(), Vec::new()), others: Default::default() };
    while let Some(field) = multipart.next_field().await? {
        let name = field.name().unwrap_or_default().to_string();
        if name == "csrf" {
            relayed.csrf = field.text().await?;
            continue;
        }
        if !pass.contains(&name.as_str()) {
            let value = field.text().await.unwrap_or_default();
            relayed.others.insert(name, value);
            continue;
        }
        let filename = field.file_name().map(|f| f.replace(['"', '\r', '\n'], ""));
        let content_type = field.content_type().map(|t| t.replace(['\r', '\n'], "")).unwrap_or_else(|| "application/octet-stream".to_string());
        let bytes = field.bytes().await?;
        if filename.is_some() && bytes.is_empty() {
            continue;
        }
        body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"").as_bytes());
        if let Some(filename) = filename {
            body.extend_from_slice(format!("; filename=\"{filename}\"\r\nContent-Type: {content_type}").as_bytes());
        }
        body.extend_from_slice(b"\r\n\r\n");
        body.extend_from_slice(&bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    relayed.payload = (format!("multipart/form-data; boundary={boundary}"), body);
    Ok(relayed)
}
