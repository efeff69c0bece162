//! A strict reader over one TOML table: every accessor names the key it reads, and
//! [`Fields::finish`] refuses any key nobody asked for, listing the ones that are allowed.
//! Errors carry the file, the dotted key and what would have been accepted.

use std::time::Duration;

use toml::{Table, Value};

use crate::base::suggest::did_you_mean;
use crate::base::units::parse_duration;

/// A scenario file that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: `{key}`: {msg}")]
pub struct ScenarioError {
    pub file: String,
    pub key: String,
    pub msg: String,
}

pub struct Fields<'a> {
    file: &'a str,
    prefix: String,
    table: &'a Table,
    known: Vec<&'static str>,
    /// Keys that are names rather than settings (see [`Fields::keys`]).
    names: Vec<String>,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a datetime",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

impl<'a> Fields<'a> {
    pub fn new(file: &'a str, prefix: &str, table: &'a Table) -> Self {
        Fields { file, prefix: prefix.to_owned(), table, known: Vec::new(), names: Vec::new() }
    }

    /// The dotted name of `key` in this table.
    pub fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    pub fn err(&self, key: &str, msg: impl std::fmt::Display) -> ScenarioError {
        ScenarioError { file: self.file.to_owned(), key: self.path(key), msg: msg.to_string() }
    }

    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.known.push(key);
        self.table.get(key)
    }

    pub fn raw(&mut self, key: &'static str) -> Option<&'a Value> {
        self.get(key)
    }

    /// The value under `key`, without marking it as read.
    pub(crate) fn raw_peek(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    /// The whole table, as written (nothing is marked as read).
    pub(crate) fn table_ref(&self) -> &'a Table {
        self.table
    }

    /// Whether `key` is present, without marking it as read.
    pub(crate) fn raw_unread(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// The keys of a table whose keys are names (like `[profile.NAME]`); all count as read.
    pub fn keys(&mut self) -> Vec<String> {
        let keys: Vec<String> = self.table.keys().cloned().collect();
        self.names.extend(keys.iter().cloned());
        keys
    }

    /// The table under a name returned by [`Fields::keys`].
    pub(crate) fn named_table(&self, name: &str) -> Result<Fields<'a>, ScenarioError> {
        match self.table.get(name) {
            Some(Value::Table(t)) => Ok(Fields::new(self.file, &self.path(name), t)),
            Some(v) => Err(self.err(name, format!("expected a table, found {}", type_name(v)))),
            None => Err(self.err(name, "is missing")),
        }
    }

    /// The value under `key` as `as_kind` reads it, or an error saying it is not
    /// `expected` (`a string`, ...) but what it is.
    fn typed<T>(
        &mut self,
        key: &'static str,
        expected: &str,
        as_kind: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Result<Option<T>, ScenarioError> {
        let Some(v) = self.get(key) else { return Ok(None) };
        as_kind(v).map(Some).ok_or_else(|| self.err(key, format!("expected {expected}, found {}", type_name(v))))
    }

    pub fn string(&mut self, key: &'static str) -> Result<Option<&'a str>, ScenarioError> {
        self.typed(key, "a string", Value::as_str)
    }

    pub(crate) fn required_string(&mut self, key: &'static str) -> Result<&'a str, ScenarioError> {
        self.string(key)?.ok_or_else(|| self.err(key, "is required"))
    }

    /// A string that must be one of `allowed`.
    pub(crate) fn choice(&mut self, key: &'static str, allowed: &[&str]) -> Result<Option<&'a str>, ScenarioError> {
        match self.string(key)? {
            None => Ok(None),
            Some(s) if allowed.contains(&s) => Ok(Some(s)),
            Some(s) => {
                let hint = did_you_mean(s, allowed.iter().copied());
                Err(self.err(key, format!("unknown value {s:?}{hint}; allowed: {}", allowed.join(", "))))
            }
        }
    }

    pub fn duration(&mut self, key: &'static str) -> Result<Option<Duration>, ScenarioError> {
        let Some(s) = self.typed(key, "a duration string like \"300ms\"", Value::as_str)? else { return Ok(None) };
        parse_duration(s).map(Some).map_err(|e| self.err(key, e))
    }

    pub(crate) fn boolean(&mut self, key: &'static str) -> Result<Option<bool>, ScenarioError> {
        self.typed(key, "true or false", Value::as_bool)
    }

    pub(crate) fn float(&mut self, key: &'static str, min: f64, max: f64) -> Result<Option<f64>, ScenarioError> {
        let number = |v: &Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
        let Some(v) = self.typed(key, "a number", number)? else { return Ok(None) };
        if !(min..=max).contains(&v) {
            use crate::base::units::readable;
            let (v, min, max) = (readable(v, 6), readable(min, 6), readable(max, 6));
            return Err(self.err(key, format!("{v} is out of range; allowed: {min} to {max}")));
        }
        Ok(Some(v))
    }

    pub(crate) fn int(&mut self, key: &'static str, min: i64, max: i64) -> Result<Option<i64>, ScenarioError> {
        let Some(v) = self.typed(key, "an integer", Value::as_integer)? else { return Ok(None) };
        if !(min..=max).contains(&v) {
            return Err(self.err(key, format!("{v} is out of range; allowed: {min} to {max}")));
        }
        Ok(Some(v))
    }

    pub(crate) fn strings(&mut self, key: &'static str) -> Result<Vec<&'a str>, ScenarioError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.as_str()),
                    v => Err(self.err(key, format!("expected an array of strings, found {} in it", type_name(v)))),
                })
                .collect(),
            Some(v) => Err(self.err(key, format!("expected an array of strings, found {}", type_name(v)))),
        }
    }

    pub fn table(&mut self, key: &'static str) -> Result<Option<Fields<'a>>, ScenarioError> {
        let t = self.typed(key, "a table", Value::as_table)?;
        Ok(t.map(|t| Fields::new(self.file, &self.path(key), t)))
    }

    pub fn tables(&mut self, key: &'static str) -> Result<Vec<Fields<'a>>, ScenarioError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::Table(t) => Ok(Fields::new(self.file, &format!("{}[{i}]", self.path(key)), t)),
                    v => Err(self.err(key, format!("expected [[{key}]] tables, found {}", type_name(v)))),
                })
                .collect(),
            Some(v) => Err(self.err(key, format!("expected [[{key}]] tables, found {}", type_name(v)))),
        }
    }

    /// What `parse` reads of this table, then [`Fields::finish`] on the rest.
    pub(crate) fn read<T>(
        mut self,
        parse: impl FnOnce(&mut Self) -> Result<T, ScenarioError>,
    ) -> Result<T, ScenarioError> {
        let v = parse(&mut self)?;
        self.finish().map(|_| v)
    }

    /// Refuses every key that no accessor read.
    pub fn finish(self) -> Result<(), ScenarioError> {
        let mut unknown: Vec<&String> =
            self.table.keys().filter(|k| !self.known.contains(&k.as_str()) && !self.names.contains(k)).collect();
        unknown.sort();
        if let Some(k) = unknown.first() {
            let mut allowed = self.known.clone();
            allowed.sort();
            allowed.dedup();
            let hint = did_you_mean(k, allowed.iter().copied());
            return Err(self.err(k, format!("unknown key{hint}; allowed here: {}", allowed.join(", "))));
        }
        Ok(())
    }
}
