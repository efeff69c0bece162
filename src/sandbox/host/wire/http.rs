//! Just enough HTTP/1.1 for the delay proxy to see the messages of one connection, in one
//! direction, in pieces as they come off the wire: where each head ends (parsed by
//! `httparse`), the body's bytes (framed by Content-Length, by chunked coding, or for a
//! response with neither, by the connection's close; chunk framing stripped) and where each
//! message ends. Keep-alive: messages follow each other on one connection. Nothing is
//! rewritten: the caller forwards the bytes it fed as they were.

use std::ops::Range;

/// A head longer than this is refused (the daemon's requests and answers have short ones).
const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

/// The start line of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    Request { method: String, target: String },
    Response { status: u16 },
}

/// How a message's body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    Empty,
    Length(u64),
    Chunked,
    /// A response with neither length nor chunks: its body ends when the connection does.
    UntilClose,
}

/// One message's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub start: Start,
    pub body: Body,
}

impl Head {
    /// A request's method, `""` in a response.
    pub fn method(&self) -> &str {
        match &self.start {
            Start::Request { method, .. } => method,
            Start::Response { .. } => "",
        }
    }

    /// A request's path, without its query (`""` in a response).
    pub fn path(&self) -> &str {
        match &self.start {
            Start::Request { target, .. } => target.split('?').next().unwrap_or(""),
            Start::Response { .. } => "",
        }
    }

    /// An interim response (1xx): a final one follows for the same request.
    pub(crate) fn interim(&self) -> bool {
        matches!(self.start, Start::Response { status } if status < 200)
    }
}

/// What one piece of input held, with offsets into that piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A head ended (at this offset, exclusive).
    Head(Head, usize),
    /// Body bytes (chunk framing excluded).
    Data(Range<usize>),
    /// A message ended (at this offset, exclusive).
    End(usize),
}

/// Why a stream cannot be framed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not HTTP/1.1 as expected: {0}")]
pub(crate) struct FrameError(pub String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    /// The CRLF after a chunk's data.
    ChunkEnd,
    Trailer,
    UntilClose,
    Broken,
}

/// The framing of one direction of a connection: requests (client to server) or responses.
#[derive(Debug)]
pub(crate) struct Framer {
    responses: bool,
    state: State,
    /// The head, a chunk-size line or a trailer line so far.
    line: Vec<u8>,
    /// The next response answers a HEAD request: it has no body whatever its head says.
    answers_head: bool,
}

fn broken(why: impl Into<String>) -> FrameError {
    FrameError(why.into())
}

impl Framer {
    pub(crate) fn requests() -> Framer {
        Framer { responses: false, state: State::Head, line: Vec::new(), answers_head: false }
    }

    pub(crate) fn responses() -> Framer {
        Framer { responses: true, ..Framer::requests() }
    }

    /// Between two messages (nothing of the next one seen yet).
    pub(crate) fn between(&self) -> bool {
        self.state == State::Head && self.line.is_empty()
    }

    /// Says whether the next response answers a HEAD request (set before it starts).
    pub(crate) fn next_answers_head(&mut self, yes: bool) {
        self.answers_head = yes;
    }

    /// Frames `buf`, the next bytes of the stream, appending what it held to `out`. After an
    /// error the stream cannot be framed any more (every later call fails too).
    pub(crate) fn feed(&mut self, buf: &[u8], out: &mut Vec<Event>) -> Result<(), FrameError> {
        let mut i = 0;
        while i < buf.len() {
            match self.state {
                State::Broken => return Err(broken("an earlier error")),
                State::Head => {
                    let b = buf[i];
                    i += 1;
                    // Line breaks between messages are ignored (RFC 9112 §2.2).
                    if self.line.is_empty() && (b == b'\r' || b == b'\n') {
                        continue;
                    }
                    self.line.push(b);
                    if self.line.ends_with(b"\r\n\r\n") {
                        let head = self.parse_head().inspect_err(|_| self.state = State::Broken)?;
                        self.line.clear();
                        let body = head.body;
                        out.push(Event::Head(head, i));
                        self.begin(body, i, out);
                    } else if self.line.len() > MAX_HEAD {
                        self.state = State::Broken;
                        return Err(broken(format!("a head of more than {MAX_HEAD} bytes")));
                    }
                }
                State::Length(n) | State::ChunkData(n) => {
                    let take = n.min((buf.len() - i) as u64) as usize;
                    out.push(Event::Data(i..i + take));
                    i += take;
                    let left = n - take as u64;
                    self.state = match (self.state, left) {
                        (State::Length(_), 0) => {
                            out.push(Event::End(i));
                            State::Head
                        }
                        (State::Length(_), _) => State::Length(left),
                        (_, 0) => State::ChunkEnd,
                        _ => State::ChunkData(left),
                    };
                }
                State::UntilClose => {
                    out.push(Event::Data(i..buf.len()));
                    i = buf.len();
                }
                State::ChunkSize | State::ChunkEnd | State::Trailer => {
                    let b = buf[i];
                    i += 1;
                    self.chunk_line(b, i, out)?;
                }
            }
        }
        Ok(())
    }

    /// One byte of a chunk-size line, a chunk's closing line break or a trailer line (ending
    /// at `i`): a whole line moves the state on.
    fn chunk_line(&mut self, b: u8, i: usize, out: &mut Vec<Event>) -> Result<(), FrameError> {
        self.line.push(b);
        if b != b'\n' {
            if self.line.len() > MAX_HEAD {
                self.state = State::Broken;
                return Err(broken("a chunk line too long"));
            }
            return Ok(());
        }
        let line = std::mem::take(&mut self.line);
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        self.state = match self.state {
            State::ChunkEnd if text.is_empty() => State::ChunkSize,
            State::ChunkEnd => {
                self.state = State::Broken;
                return Err(broken("a chunk longer than its size"));
            }
            State::ChunkSize => match chunk_size(text) {
                Some(0) => State::Trailer,
                Some(n) => State::ChunkData(n),
                None => {
                    self.state = State::Broken;
                    return Err(broken("a bad chunk size"));
                }
            },
            // A trailer field, or the empty line that ends the message.
            _ if text.is_empty() => {
                out.push(Event::End(i));
                State::Head
            }
            _ => State::Trailer,
        };
        Ok(())
    }

    /// The stream ended: a body framed by the close ends with it (`true`). A message cut
    /// anywhere else ends unfinished (`false`).
    pub(crate) fn close(&mut self) -> bool {
        let ended = self.state == State::UntilClose;
        if ended {
            self.state = State::Head;
        }
        ended
    }

    /// After a head: the body's state (a message with none ends at once).
    fn begin(&mut self, body: Body, at: usize, out: &mut Vec<Event>) {
        self.state = match body {
            Body::Empty | Body::Length(0) => {
                out.push(Event::End(at));
                State::Head
            }
            Body::Length(n) => State::Length(n),
            Body::Chunked => State::ChunkSize,
            Body::UntilClose => State::UntilClose,
        };
    }

    fn parse_head(&mut self) -> Result<Head, FrameError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let (start, fields) = if self.responses {
            let mut r = httparse::Response::new(&mut headers);
            match r.parse(&self.line) {
                Ok(httparse::Status::Complete(_)) => {}
                Ok(httparse::Status::Partial) => return Err(broken("a partial response head")),
                Err(e) => return Err(broken(format!("a response head: {e}"))),
            }
            let status = r.code.ok_or_else(|| broken("no status"))?;
            (Start::Response { status }, r.headers.to_vec())
        } else {
            let mut r = httparse::Request::new(&mut headers);
            match r.parse(&self.line) {
                Ok(httparse::Status::Complete(_)) => {}
                Ok(httparse::Status::Partial) => return Err(broken("a partial request head")),
                Err(e) => return Err(broken(format!("a request head: {e}"))),
            }
            let method = r.method.ok_or_else(|| broken("no method"))?.to_owned();
            let target = r.path.ok_or_else(|| broken("no target"))?.to_owned();
            (Start::Request { method, target }, r.headers.to_vec())
        };
        let mut length: Option<u64> = None;
        let mut chunked = None;
        for h in &fields {
            let value = std::str::from_utf8(h.value).map_err(|_| broken(format!("a {} that is not text", h.name)))?;
            if h.name.eq_ignore_ascii_case("content-length") {
                let n = value.trim().parse::<u64>().map_err(|_| broken(format!("content-length {value:?}")))?;
                if length.is_some_and(|l| l != n) {
                    return Err(broken("two content-lengths"));
                }
                length = Some(n);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                let last = value.rsplit(',').next().unwrap_or("").trim();
                chunked = Some(last.eq_ignore_ascii_case("chunked"));
            }
        }
        let no_body = match start {
            Start::Response { status } => {
                std::mem::take(&mut self.answers_head) || status < 200 || status == 204 || status == 304
            }
            Start::Request { .. } => false,
        };
        let body = match (no_body, chunked, length, self.responses) {
            (true, ..) => Body::Empty,
            (_, Some(true), ..) => Body::Chunked,
            (_, Some(false), _, true) => Body::UntilClose,
            (_, Some(false), _, false) => return Err(broken("a request coded but not chunked")),
            (_, None, Some(n), _) => Body::Length(n),
            (_, None, None, true) => Body::UntilClose,
            (_, None, None, false) => Body::Empty,
        };
        Ok(Head { start, body })
    }
}

/// A chunk-size line's size (hex, before any `;extension`).
fn chunk_size(line: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(line).ok()?;
    let hex = text.split(';').next()?.trim();
    (!hex.is_empty()).then(|| u64::from_str_radix(hex, 16).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `parts` one after the other; returns the heads, each message's body and the
    /// stream offsets where messages ended.
    fn frame(mut f: Framer, parts: &[&[u8]]) -> (Vec<Head>, Vec<Vec<u8>>, Vec<usize>) {
        let (mut heads, mut bodies, mut ends) = (Vec::new(), vec![Vec::new()], Vec::new());
        let mut base = 0;
        for p in parts {
            let mut ev = Vec::new();
            f.feed(p, &mut ev).unwrap();
            for e in ev {
                match e {
                    Event::Head(h, _) => heads.push(h),
                    Event::Data(r) => bodies.last_mut().unwrap().extend_from_slice(&p[r]),
                    Event::End(at) => {
                        ends.push(base + at);
                        bodies.push(Vec::new());
                    }
                }
            }
            base += p.len();
        }
        bodies.pop();
        (heads, bodies, ends)
    }

    /// Every way of cutting `bytes` in two.
    fn every_split(bytes: &[u8]) -> impl Iterator<Item = [&[u8]; 2]> {
        (0..=bytes.len()).map(move |k| [&bytes[..k], &bytes[k..]])
    }

    const RUN: &[u8] = b"POST /v1/processes/run HTTP/1.1\r\ncontent-type: application/json\r\nhost: x\r\ncontent-length: 37\r\n\r\n{\"command\":\"ls\",\"args\":[\"-1\",\"/tmp\"]}";

    #[test]
    fn a_request_with_a_length_split_anywhere_frames_alike() {
        assert_eq!(RUN.len() - RUN.windows(4).position(|w| w == b"\r\n\r\n").unwrap() - 4, 37);
        for parts in every_split(RUN) {
            let (heads, bodies, ends) = frame(Framer::requests(), &parts);
            assert_eq!(heads.len(), 1, "{parts:?}");
            assert_eq!(
                (heads[0].method(), heads[0].path(), heads[0].body),
                ("POST", "/v1/processes/run", Body::Length(37))
            );
            assert_eq!(bodies, vec![br#"{"command":"ls","args":["-1","/tmp"]}"#.to_vec()]);
            assert_eq!(ends, vec![RUN.len()]);
        }
    }

    #[test]
    fn keep_alive_requests_follow_each_other_on_one_connection() {
        let get = b"GET /v1/fs/file?path=/tmp/a%20b HTTP/1.1\r\nhost: x\r\n\r\n";
        let del = b"DELETE /v1/fs/entry?path=/tmp/a HTTP/1.1\r\nhost: x\r\n\r\n";
        let stream = [&get[..], RUN, del].concat();
        for cut in [1, 7, get.len(), get.len() + 3, stream.len() - 1] {
            let (heads, bodies, ends) = frame(Framer::requests(), &[&stream[..cut], &stream[cut..]]);
            let paths: Vec<&str> = heads.iter().map(Head::path).collect();
            assert_eq!(paths, ["/v1/fs/file", "/v1/processes/run", "/v1/fs/entry"]);
            assert_eq!(ends, [get.len(), get.len() + RUN.len(), stream.len()]);
            assert_eq!((bodies[0].len(), bodies[1].len(), bodies[2].len()), (0, 37, 0));
        }
    }

    #[test]
    fn chunked_and_length_responses_end_where_their_bodies_do() {
        let chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nx-trailer: 1\r\n\r\n";
        let sized =
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/problem+json\r\ncontent-length: 2\r\n\r\n{}";
        let empty = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n";
        let stream = [&chunked[..], sized, empty].concat();
        for parts in every_split(&stream) {
            let (heads, bodies, ends) = frame(Framer::responses(), &parts);
            let statuses: Vec<Start> = heads.iter().map(|h| h.start.clone()).collect();
            assert_eq!(
                statuses,
                [Start::Response { status: 200 }, Start::Response { status: 400 }, Start::Response { status: 204 }]
            );
            assert_eq!(bodies, [b"hello, world".to_vec(), b"{}".to_vec(), Vec::new()], "chunk framing stripped");
            assert_eq!(ends, [chunked.len(), chunked.len() + sized.len(), stream.len()]);
        }
    }

    #[test]
    fn a_body_split_across_many_reads_is_whole() {
        let body = vec![b'z'; 100_000];
        let msg = [
            &format!("PUT /v1/fs/file?path=/x HTTP/1.1\r\ncontent-length: {}\r\n\r\n", body.len()).into_bytes()[..],
            &body,
        ]
        .concat();
        let parts: Vec<&[u8]> = msg.chunks(4096).collect();
        let (heads, bodies, ends) = frame(Framer::requests(), &parts);
        assert_eq!((heads.len(), bodies[0].len(), ends), (1, 100_000, vec![msg.len()]));
        let chunked =
            [&b"POST /v1/fs/move HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"[..], b"3\r\nabc\r\n", b"0\r\n\r\n"]
                .concat();
        let parts: Vec<&[u8]> = chunked.chunks(1).collect();
        let (_, bodies, ends) = frame(Framer::requests(), &parts);
        assert_eq!((bodies[0].as_slice(), ends), (&b"abc"[..], vec![chunked.len()]), "a chunked request, byte by byte");
    }

    #[test]
    fn responses_without_a_body_or_a_length() {
        let mut f = Framer::responses();
        f.next_answers_head(true);
        let (heads, _, ends) = frame(f, &[b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n"]);
        assert_eq!((heads[0].body, ends.len()), (Body::Empty, 1), "the answer to a HEAD has no body");
        let (heads, _, ends) = frame(
            Framer::responses(),
            &[b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nx"],
        );
        assert!(heads[0].interim() && !heads[1].interim());
        assert_eq!(ends.len(), 2);
        let mut f = Framer::responses();
        let mut ev = Vec::new();
        f.feed(b"HTTP/1.1 200 OK\r\n\r\nuntil the close", &mut ev).unwrap();
        assert!(!ev.iter().any(|e| matches!(e, Event::End(_))), "{ev:?}");
        assert!(!f.between() && f.close(), "ends with the connection");
    }

    #[test]
    fn what_is_not_http_breaks_the_framing_for_good() {
        let mut f = Framer::requests();
        let mut ev = Vec::new();
        assert!(f.feed(b"SSH-2.0-OpenSSH\r\n\r\n", &mut ev).is_err());
        assert!(f.feed(b"GET / HTTP/1.1\r\n\r\n", &mut ev).is_err(), "broken for good");
        let mut f = Framer::requests();
        assert!(f.feed(b"POST / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n", &mut ev).is_err());
        let mut f = Framer::responses();
        assert!(f.feed(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", &mut ev).is_err());
        assert!(Framer::requests().between());
    }
}
