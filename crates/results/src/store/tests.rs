//! Unit tests of the store's parsing and query building; the database itself is exercised
//! through the public API in `tests/api/` (one test binary).

use super::*;
use rusqlite::types::Value;
use wire::TestKind;

#[test]
fn where_clause_joins_every_condition() {
    assert_eq!(where_clause(&Filter::default()), (String::new(), vec![]));
    let filter = Filter {
        tags: Tags::parse(["mtu=9000", "driver=x"]).unwrap(),
        kind: Some(TestKind::TcpRr),
        since_unix_ms: Some(5),
        last: None,
    };
    let (clause, values) = where_clause(&filter);
    assert_eq!(clause.matches('?').count(), values.len(), "{clause}");
    assert_eq!(clause.matches(" AND id IN").count(), 2, "{clause}");
    assert_eq!(
        values,
        vec![
            Value::Text("tcp_rr".into()),
            Value::Integer(5),
            Value::Text("driver".into()),
            Value::Text("x".into()),
            Value::Text("mtu".into()),
            Value::Text("9000".into()),
        ]
    );
}

#[test]
fn the_last_n_are_the_newest_of_those_the_other_conditions_pass() {
    let filter = Filter {
        kind: Some(TestKind::TcpRr),
        last: Some(3),
        ..Filter::default()
    };
    let (clause, values) = where_clause(&filter);
    assert_eq!(
        clause,
        " WHERE id IN (SELECT id FROM runs WHERE kind = ? ORDER BY started_at_unix_ms DESC, id DESC LIMIT ?)"
    );
    assert_eq!(
        values,
        vec![Value::Text("tcp_rr".into()), Value::Integer(3)]
    );
}

/// The figures a listing reads are the columns a run is stored with, and the labels its
/// messages name them by, in one order.
#[test]
fn the_figure_columns_are_the_stored_and_the_labelled_ones() {
    let figures: Vec<&str> = crate::figure_columns!().split(", ").collect();
    assert_eq!(figures, ROW_LABELS[5..5 + figures.len()]);
    let inserted: Vec<&str> = crate::insert_columns!().split(", ").collect();
    assert_eq!(inserted[6..6 + figures.len()], figures[..]);
    assert!(
        ROW_COLUMNS.starts_with("id, started_at_unix_ms, kind, target, interrupted, duration_s, ")
    );
}
