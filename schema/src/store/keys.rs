//! Keys the service makes for itself, shared by every process.

use sqlx::PgConnection;

/// The key named `name`, made from `fresh` by the first process that asks.
pub async fn get_or_create(conn: &mut PgConnection, name: &str, fresh: &[u8]) -> sqlx::Result<Vec<u8>> {
    sqlx::query("INSERT INTO service_keys (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
        .bind(name)
        .bind(fresh)
        .execute(&mut *conn)
        .await?;
    sqlx::query_scalar("SELECT secret FROM service_keys WHERE name = $1").bind(name).fetch_one(conn).await
}

/// The key named `name`, if some process made it.
pub async fn get(conn: &mut PgConnection, name: &str) -> sqlx::Result<Option<Vec<u8>>> {
    sqlx::query_scalar("SELECT secret FROM service_keys WHERE name = $1").bind(name).fetch_optional(conn).await
}
