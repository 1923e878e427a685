//! The dashboard at `/app` (#28): server-rendered pages for people, on the dashboard session.
//! Every page reads and writes through the API's own routes ([`client`]) with the browser's
//! session, so no rule is implemented twice and request logs say `dashboard`. Pages carry no
//! inline script or style; the stylesheet, a small script and htmx are served from the binary.

mod client;
mod domains;
mod emails;
mod layout;
mod login;
mod overview;

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
        .at("/logout", post(login::logout.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/domains", get(domains::list))
        .at("/domains/:id", get(domains::detail))
        .at("/domains/:id/verify", post(domains::verify.with(SizeLimit::new(MAX_FORM_BYTES))))
        .at("/emails", get(emails::list))
        .at("/emails/:id", get(emails::detail))
        .at("/emails/:id/preview", get(emails::preview))
        .at("/assets/app.css", get(layout::stylesheet))
        .at("/assets/app.js", get(layout::script))
        .at("/assets/htmx.min.js", get(layout::htmx))
        .data(client::Api(app))
}
