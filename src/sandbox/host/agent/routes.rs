//! Which runner operation a request to the daemon is, read off the wire by the delay proxy
//! that admits and counts it (the table of [`super`], backwards): the route, and for a
//! `POST /v1/processes/run` its command, production's list being an exec of `ls -1 DIR`
//! and every other run an exec (the watch program: relay-bench's own `sandbox-watch`, or
//! production's `node -e`).

use serde::Deserialize;

use crate::sandbox::host::wire::http::Head;
use crate::sandbox::host::Kind;

/// The kind of one request to the daemon, as the runner's host counts it; `None` for a
/// request the runner's host never makes (let through, not counted).
pub fn request_kind(head: &Head, body: &[u8]) -> Option<Kind> {
    Some(match (head.method(), head.path()) {
        ("POST", "/v1/processes/run") if is_list(body) => Kind::List,
        ("POST", "/v1/processes/run") => Kind::Exec,
        ("GET", "/v1/fs/file") => Kind::Read,
        ("PUT", "/v1/fs/file") => Kind::Write,
        ("POST", "/v1/fs/move") => Kind::Rename,
        ("DELETE", "/v1/fs/entry") => Kind::Delete,
        ("GET", "/v1/fs/stat") => Kind::Stat,
        _ => return None,
    })
}

/// A run of `ls -1 DIR`: the runner's list.
fn is_list(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Run {
        command: String,
        #[serde(default)]
        args: Vec<String>,
    }
    serde_json::from_slice::<Run>(body).is_ok_and(|r| r.command == "ls" && r.args.len() == 2 && r.args[0] == "-1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::host::wire::http::{Body, Start};

    fn head(method: &str, target: &str) -> Head {
        Head { start: Start::Request { method: method.into(), target: target.into() }, body: Body::Empty }
    }

    #[test]
    fn every_operation_of_the_runner_is_told_apart() {
        let run = head("POST", "/v1/processes/run");
        let list = br#"{"command":"ls","args":["-1","/tmp/relay dir"],"timeoutMs":10000}"#;
        assert_eq!(request_kind(&run, list), Some(Kind::List));
        let watch = br#"{"command":"/tmp/rb/relay-bench","args":["sandbox-watch","--","/tmp/d","25000","2000"],"timeoutMs":30000}"#;
        assert_eq!(request_kind(&run, watch), Some(Kind::Exec));
        let node = br#"{"command":"node","args":["-e","script","/tmp/d","25000","2000"],"timeoutMs":30000}"#;
        assert_eq!(request_kind(&run, node), Some(Kind::Exec));
        assert_eq!(request_kind(&run, br#"{"command":"ls","args":["-la","/"]}"#), Some(Kind::Exec), "not the list");
        assert_eq!(request_kind(&run, b"{not json"), Some(Kind::Exec));
        let cases = [
            ("GET", "/v1/fs/file?path=/a", Kind::Read),
            ("PUT", "/v1/fs/file?path=/a", Kind::Write),
            ("POST", "/v1/fs/move", Kind::Rename),
            ("DELETE", "/v1/fs/entry?path=/a", Kind::Delete),
            ("GET", "/v1/fs/stat?path=/a", Kind::Stat),
        ];
        for (m, t, k) in cases {
            assert_eq!(request_kind(&head(m, t), b""), Some(k), "{m} {t}");
        }
        assert_eq!(request_kind(&head("GET", "/v1/health"), b""), None);
        assert_eq!(request_kind(&head("POST", "/v1/processes"), b""), None, "a background process: not the runner's");
    }
}
