//! The dashboard at `/app` (#28): server-rendered pages for people, on the dashboard session.
//! Every page reads and writes through the API's own routes ([`client`]) with the browser's
//! session, so no rule is implemented twice and request logs say `dashboard`. Pages carry no
//! inline script or style; the stylesheet, a small script and htmx are served from the binary.

/// The signed-in session, or (returning) the way to the sign-in page.
macro_rules! signed_in {
    ($req:expr, $api:expr) => {
        match $api.session($req).await? {
            Some(session) => session,
            None => return Ok(super::layout::to_sign_in()),
        }
    };
}

mod account;
mod assist;
mod audience;
mod automations;
mod billing;
mod blocks;
mod brand;
mod broadcasts;
mod client;
mod domains;
mod editor;
mod emails;
mod graph;
mod imports;
mod inbox;
mod inbox_filing;
mod keys;
mod kit;
mod layout;
mod login;
mod logs;
mod migrations;
mod overview;
mod profile;
mod received;
mod segments;
mod suppressions;
mod team;
mod templates;
mod upload;
mod variables;
mod webhooks;

use crate::app::AppSlot;
use poem::middleware::SizeLimit;
use poem::{Endpoint, EndpointExt, Route, get, post};

/// The largest form the dashboard reads.
const MAX_FORM_BYTES: usize = 64 * 1024;

/// Whether a path is the dashboard's (the gateway hands these to it without an operation).
pub fn is_dashboard_path(path: &str) -> bool {
    path == "/app" || path.starts_with("/app/")
}

/// The dashboard's routes, to nest at `/app`.
pub fn routes(app: AppSlot) -> impl Endpoint {
    Route::new()
        .at("/", get(overview::page_handler))
        .at("/login", get(login::form).post(login::submit.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/signup", get(account::sign_up_form).post(account::sign_up.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/reset", get(account::reset_form).post(account::reset.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/logout", post(login::logout.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/test-email", post(overview::test_email.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/domains", get(domains::list).post(domains::create.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/domains/claim", post(domains::claim.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/domains/:id", get(domains::detail))
        .at("/domains/:id/verify", post(domains::verify.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/domains/:id/settings", post(domains::settings.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/domains/:id/rotate", post(domains::rotate.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/emails/:id/cancel", post(emails::cancel.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/emails/:id/reschedule", post(emails::reschedule.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/receiving", get(received::list))
        .at("/receiving/:id", get(received::detail))
        .at("/receiving/:id/preview", get(received::preview))
        .at("/emails", get(emails::list))
        .at("/emails/:id", get(emails::detail))
        .at("/emails/:id/preview", get(emails::preview))
        .at("/api-keys", get(keys::list).post(keys::create.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/api-keys/:id/revoke", post(keys::revoke.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/webhooks", get(webhooks::list).post(webhooks::create.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/webhooks/:id", get(webhooks::detail))
        .at("/webhooks/:id/rotate", post(webhooks::rotate.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/webhooks/:id/events/:event_id", get(webhooks::event))
        .at("/webhooks/:id/events/:event_id/replay", post(webhooks::replay.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/logs", get(logs::list))
        .at("/logs/:id", get(logs::detail))
        .at("/suppressions", get(suppressions::list).post(suppressions::add.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/suppressions/:id/remove", post(suppressions::remove.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/contacts", get(audience::contacts).post(audience::create.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/contacts/imports", get(imports::list).post(imports::upload.with(SizeLimit::new(imports::MAX_UPLOAD_BYTES))))
        .at("/contacts/imports/:id", get(imports::detail))
        .at("/contacts/imports/:id/progress", get(imports::progress_fragment))
        .at("/contacts/:id", get(audience::contact))
        .at("/contacts/:id/delete", post(audience::delete.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/segments", get(segments::list).post(segments::create.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/segments/count", post(segments::count.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/segments/:id", get(audience::segment))
        .at("/topics", get(audience::topics))
        .at("/templates", get(templates::list).post(templates::create.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/templates/:id", get(templates::detail).post(templates::save.with(SizeLimit::new(imports::MAX_UPLOAD_BYTES))))
        .at("/templates/:id/preview", get(templates::preview))
        .at("/templates/draft", post(assist::draft_template.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/templates/:id/ai/subjects", post(templates::suggest_subjects.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/templates/:id/blocks", post(templates::edit_blocks.with(SizeLimit::new(imports::MAX_UPLOAD_BYTES))))
        .at("/templates/:id/publish", post(templates::publish.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/broadcasts", get(broadcasts::list).post(broadcasts::create.with(SizeLimit::new(imports::MAX_UPLOAD_BYTES))))
        .at("/broadcasts/:id", get(broadcasts::detail))
        .at("/broadcasts/:id/progress", get(broadcasts::progress_fragment))
        .at("/broadcasts/:id/send", post(broadcasts::send.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/broadcasts/:id/cancel", post(broadcasts::cancel.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/automations", get(automations::list))
        .at("/automations/:id", get(automations::detail))
        .at("/automations/:id/runs/:run_id", get(automations::run))
        .at("/inbox", get(inbox::list))
        .at("/inbox/search", get(inbox_filing::search))
        .at("/inbox/folders", post(inbox_filing::create_folder.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/inbox/labels", post(inbox_filing::create_label.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/inbox/:id", get(inbox::detail))
        .at("/inbox/:id/reply", post(inbox::reply.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/inbox/:id/note", post(inbox::note.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/inbox/:id/update", post(inbox::update.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/inbox/:id/file", post(inbox::file.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/inbox/:id/draft", post(inbox::save_draft.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/brand", get(brand::page_handler).post(brand::save.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/brand/logo", post(brand::upload_logo.with(SizeLimit::new(3 * 1024 * 1024))))
        .at("/saved-blocks/:id/delete", post(brand::delete_saved.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/billing", get(billing::page_handler))
        .at("/billing/plan", post(billing::change_plan.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/billing/portal", post(billing::portal.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/migrations", get(migrations::list).post(migrations::create.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/migrations/upload", post(migrations::upload.with(SizeLimit::new(imports::MAX_UPLOAD_BYTES))))
        .at("/migrations/:id", get(migrations::detail))
        .at("/migrations/:id/progress", get(migrations::progress_fragment))
        .at("/migrations/:id/start", post(migrations::start.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/migrations/:id/cancel", post(migrations::cancel.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/exports", post(migrations::export.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/account", get(profile::page_handler))
        .at("/account/totp", post(profile::start.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/account/totp/confirm", post(profile::confirm.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/account/totp/disable", post(profile::disable.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/account/verify", post(profile::resend_verification.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/team", get(team::page_handler))
        .at("/team/invitations", post(team::invite.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/team/grants/:id/revoke", post(team::revoke_grant.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/assets/app.css", get(layout::stylesheet))
        .at("/assets/app.js", get(layout::script))
        .at("/assets/htmx.min.js", get(layout::htmx))
        .data(client::Api(app))
}
