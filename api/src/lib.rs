//! Herald's API: the `herald` binary's CLI, configuration and application (`cli`, `config`,
//! `app`, `state`); the edge every request passes (`http`: the gateway, the operation table,
//! errors, bodies, paging, idempotency, rate limits, request logs); the OpenAPI document
//! (`document`); and the routes, a folder per area (`routes`).

pub mod app;
pub mod cli;
pub mod config;
pub mod document;
pub mod http;
pub mod routes;
pub mod state;
