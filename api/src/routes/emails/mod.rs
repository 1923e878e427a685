//! Email: sending (`send`, through the accept pipeline in `accept` with its body types in
//! `send_body` and URL attachments fetched by `fetch`), reading, rescheduling and cancelling
//! sent mail (`manage`), share links (`shares`), and received mail (`received`).

pub mod accept;
pub mod fetch;
pub mod manage;
pub mod pause;
pub mod received;
pub mod send;
pub mod send_body;
pub mod shares;
pub mod views;
