//! Cursor paging shared by every list: newest first, `after` pages toward older items,
//! `before` toward newer ones.

use uuid::Uuid;

/// Where a page starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor {
    /// Items older than this id.
    After(Uuid),
    /// Items newer than this id.
    Before(Uuid),
}

/// A validated page request: `limit` is 1..=100.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: i64,
    pub cursor: Option<Cursor>,
}

impl PageRequest {
    pub const DEFAULT_LIMIT: i64 = 20;
    pub const MAX_LIMIT: i64 = 100;

    /// Appends ` AND id < $n ORDER BY id DESC LIMIT $m` (or the `before` form) to a query whose
    /// WHERE clause is already open. Fetches one extra row to learn `has_more`.
    pub fn push_to(&self, query: &mut sqlx::QueryBuilder<sqlx::Postgres>, id_column: &str) {
        match self.cursor {
            Some(Cursor::After(id)) => {
                query.push(format!(" AND {id_column} < ")).push_bind(id);
                query.push(format!(" ORDER BY {id_column} DESC"));
            }
            Some(Cursor::Before(id)) => {
                query.push(format!(" AND {id_column} > ")).push_bind(id);
                query.push(format!(" ORDER BY {id_column} ASC"));
            }
            None => {
                query.push(format!(" ORDER BY {id_column} DESC"));
            }
        }
        query.push(" LIMIT ").push_bind(self.limit + 1);
    }

    /// Turns the fetched rows (up to `limit + 1`) into a newest-first page.
    pub fn finish<T>(&self, mut rows: Vec<T>) -> Page<T> {
        let has_more = rows.len() as i64 > self.limit;
        rows.truncate(self.limit as usize);
        if matches!(self.cursor, Some(Cursor::Before(_))) {
            rows.reverse();
        }
        Page { has_more, data: rows }
    }
}

impl Default for PageRequest {
    fn default() -> Self {
        Self { limit: Self::DEFAULT_LIMIT, cursor: None }
    }
}

/// One page of a list.
#[derive(Debug)]
pub struct Page<T> {
    pub has_more: bool,
    pub data: Vec<T>,
}

impl<T> Page<T> {
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page { has_more: self.has_more, data: self.data.into_iter().map(f).collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extra_row_means_there_is_more() {
        let page = PageRequest { limit: 2, cursor: None }.finish(vec![3, 2, 1]);
        assert!(page.has_more);
        assert_eq!(page.data, vec![3, 2]);
    }

    #[test]
    fn a_before_page_is_returned_newest_first() {
        let page = PageRequest { limit: 2, cursor: Some(Cursor::Before(Uuid::nil())) }.finish(vec![1, 2]);
        assert!(!page.has_more);
        assert_eq!(page.data, vec![2, 1]);
    }
}
