//! The brand kit and saved blocks: the team's colours, font, button shape, logo (a link or an
//! uploaded image) and footer that visual templates draw with (`PATCH /team`, sent whole;
//! `POST /team/brand-kit/uploads`), and the saved blocks the block editor inserts, with
//! deleting one (`DELETE /saved-blocks/{id}`; templates keep their copies).

use super::client::{Answer, Api, Session};
use super::kit::{self, Field, Fields, Input};
use super::layout::{page, time};
use poem::http::{Method, StatusCode};
use poem::web::{Data, Form, Multipart, Path};
use poem::{Request, Response, handler};
use serde_json::{Map, Value, json};

/// The brand kit's fields, as `PATCH /team` names them under `brand_kit`.
const FIELDS: &[Field] = &[
    Field::text("company_name", "Company name", 200).optional(),
    Field::text("logo_url", "Logo URL (https, or an uploaded image's)", 2048).optional(),
    Field::text("primary_color", "Primary colour (#RRGGBB)", 7).optional(),
    Field::text("accent_color", "Accent colour (#RRGGBB, buttons and links)", 7).optional(),
    Field { name: "font", label: "Font", input: Input::Select(&["", "system", "helvetica", "arial", "verdana", "georgia", "times", "courier"]), required: false, max: None },
    Field { name: "button_style", label: "Buttons", input: Input::Select(&["", "square", "rounded", "pill"]), required: false, max: None },
    Field::text("address", "Postal address line", 200).optional(),
    Field::text("footer_text", "Footer text", 500).optional(),
];

/// `GET /app/brand`.
#[handler]
pub async fn page_handler(req: &Request, api: Data<&Api>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    brand_page(req, &api, &session, None, None).await
}

async fn brand_page(req: &Request, api: &Api, session: &Session, values: Option<&Fields>, refused: Option<&Answer>) -> poem::Result<Response> {
    let team = api.get(req, "/team").await?;
    let kit_now = &team.body["brand_kit"];
    let current: Fields = FIELDS.iter().map(|f| (f.name.to_string(), kit_now[f.name].as_str().unwrap_or_default().to_string())).collect();
    let values = values.unwrap_or(&current);
    let logo = kit_now["logo_url"].as_str().map_or_else(String::new, |url| format!("<p class=\"muted\">Logo now: <code>{}</code></p>", kit::text(&json!(url))));
    let (brand, upload) = if session.can_write() {
        (
            kit::form("/app/brand", &session.csrf, FIELDS, values, refused, "Save brand kit"),
            format!(
                "<form class=\"stack\" method=\"post\" action=\"/app/brand/logo\" enctype=\"multipart/form-data\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
                 <label for=\"logo-file\">Upload a logo (PNG, JPEG, GIF or WebP, up to 2 MB)</label><input id=\"logo-file\" name=\"file\" type=\"file\" accept=\"image/png,image/jpeg,image/gif,image/webp\" required>\
                 <button type=\"submit\">Upload and use</button></form>",
                kit::text(&json!(session.csrf))
            ),
        )
    } else {
        (kit::facts(&FIELDS.iter().map(|f| (f.label, kit::text(&kit_now[f.name]))).collect::<Vec<_>>()), String::new())
    };
    let saved = api.get(req, "/saved-blocks?limit=100").await?;
    let saved = kit::table(
        &["Name", "Kind", "Block", "Updated", ""],
        &kit::rows(&saved),
        |b| {
            let remove = if session.can_write() { kit::button(&format!("/app/saved-blocks/{}/delete", kit::id(&b["id"])), &session.csrf, "Delete") } else { String::new() };
            vec![kit::text(&b["name"]), kit::word(&b["kind"]), kit::word(&b["content"]["type"]), time(&b["updated_at"]), remove]
        },
        "No saved block yet. In a visual template's editor, “Keep as saved block” saves one; edits to it reach every template that uses it.",
    );
    let alert = refused.map_or_else(String::new, |a| kit::note(false, &a.message()));
    let body = format!(
        "<h1>Brand kit</h1>{alert}<p class=\"muted\">Visual templates draw with these; a template can override them.</p>{}{}",
        kit::card("brand-kit", "Brand", &format!("{logo}{brand}{upload}")),
        kit::card("saved-blocks", "Saved blocks", &saved)
    );
    Ok(page(refused.map_or(StatusCode::OK, kit::status_of), "Brand kit", Some(session), &body))
}

/// The brand kit a form describes (blank fields are `null`, Herald's default).
fn brand_kit(form: &Fields) -> Value {
    let fields: Map<String, Value> = FIELDS.iter().map(|f| (f.name.to_string(), kit::given(form, f.name).map_or(Value::Null, |v| json!(v)))).collect();
    Value::Object(fields)
}

/// `POST /app/brand`: `PATCH /team { brand_kit }`; the API's error stands beside its field.
#[handler]
pub async fn save(req: &Request, api: Data<&Api>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::PATCH, "/team", Some(&json!({ "brand_kit": brand_kit(&form) })), &form).await?;
    if !answer.ok() {
        // The API names fields as `brand_kit.<field>`; the form names them without the prefix.
        let errors: Vec<Value> = answer.body["errors"]
            .as_array()
            .map_or_else(Vec::new, |errors| errors.iter().map(|e| json!({ "path": e["path"].as_str().map(|p| p.trim_start_matches("brand_kit.")), "message": e["message"] })).collect());
        let answer = Answer { body: json!({ "message": answer.message(), "errors": errors }), ..answer };
        return brand_page(req, &api, &session, Some(&form), Some(&answer)).await;
    }
    Ok(kit::see_other("/app/brand"))
}

/// `POST /app/brand/logo`: the image to `POST /team/brand-kit/uploads`, then its `logo_url`
/// into the brand kit.
#[handler]
pub async fn upload_logo(req: &Request, api: Data<&Api>, multipart: Multipart) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let relayed = super::upload::relay(multipart, &["file"]).await?;
    let uploaded = api.send(req, Method::POST, "/team/brand-kit/uploads", Some(relayed.payload), Some(&relayed.csrf), &[]).await?;
    if !uploaded.ok() {
        return brand_page(req, &api, &session, None, Some(&uploaded)).await;
    }
    let team = api.get(req, "/team").await?;
    let mut kit_now = team.body["brand_kit"].clone();
    kit_now["logo_url"] = uploaded.body["logo_url"].clone();
    let answer = api.call(req, Method::PATCH, "/team", Some(&json!({ "brand_kit": kit_now })), Some(&relayed.csrf)).await?;
    if !answer.ok() {
        return brand_page(req, &api, &session, None, Some(&answer)).await;
    }
    Ok(kit::see_other("/app/brand"))
}

/// `POST /app/saved-blocks/{id}/delete`: `DELETE /saved-blocks/{id}`.
#[handler]
pub async fn delete_saved(req: &Request, api: Data<&Api>, Path(id): Path<String>, Form(form): Form<Fields>) -> poem::Result<Response> {
    let session = signed_in!(req, api);
    let answer = kit::write(req, &api, Method::DELETE, &format!("/saved-blocks/{}", super::kit::urlencoding(&id)), None, &form).await?;
    if !answer.ok() {
        return brand_page(req, &api, &session, None, Some(&answer)).await;
    }
    Ok(kit::see_other("/app/brand"))
}
