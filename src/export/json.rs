//! `summary.json`: the machine-readable result (see `Summary` for the fields).

use super::Exporter;
use crate::summary::Summary;

pub struct Json;

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }

    fn render(&self, summary: &Summary) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(summary).expect("a summary always serializes");
        v.push(b'\n');
        v
    }
}
