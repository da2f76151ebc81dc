//! A server-sent event client over reqwest's byte stream, reading the stream as the HTML
//! standard's parser does (lines end in LF, CRLF or CR; `field: value` with one optional space
//! after the colon; `:` starts a comment; `data:` lines joined by `\n`; a blank line ends an
//! event), and handing over every event, a dataless one included, as a Spring
//! `ServerSentEvent` reader does (a browser's `EventSource` drops an event without data).
//!
//! The admin's stream numbers its events (the id is a ticket), so the client reads each `id:`
//! as a number and panics on one that is not. Every wait is tokio's, so on a paused clock it is
//! virtual: the connection has no overall timeout (a stream lives on for minutes of virtual
//! time), and each read of bytes waits at most [`READ_TIMEOUT`].

use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use serde_json::Value;

/// How long one read waits for bytes before the client panics: the stream sends its heartbeat
/// every second, so 5 s without a byte is a stuck stream.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// One event: its fields as the stream sent them, `None` for a field it did not send.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `id:` field, the stream's ticket for the event.
    pub id: Option<u64>,
    pub event: Option<String>,
    /// The `data:` lines joined by `\n`; `None` when the event had no `data:` line.
    pub data: Option<String>,
}

impl SseEvent {
    /// The data read as JSON; panics, quoting it, when it is missing or not JSON.
    pub fn json(&self) -> Value {
        let data = self
            .data
            .as_deref()
            .unwrap_or_else(|| panic!("no data: {self:?}"));
        serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data:?}"))
    }

    /// The heartbeat, which a client of Resilience4j's stream filters out by its name.
    pub fn is_ping(&self) -> bool {
        self.event.as_deref() == Some("ping")
    }
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>;

/// An open event stream.
pub struct SseClient {
    body: Body,
    /// Bytes received; those before `taken` are already split into lines.
    pending: Vec<u8>,
    taken: usize,
    /// The last line ended with CR: an LF that starts the next bytes belongs to it.
    after_cr: bool,
    /// The event being read.
    current: SseEvent,
    /// Lines of the current event seen (a comment-only block is no event).
    fields: usize,
}

impl SseClient {
    /// GET `url` with `Accept: text/event-stream` (and `Last-Event-ID` when given, whatever
    /// text it is); the answer must be a 200 event stream.
    pub async fn connect(url: &str, last_event_id: Option<&str>) -> SseClient {
        // No overall timeout on a stream: each read has its own.
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let mut request = client.get(url).header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{url}");
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        SseClient {
            body: Box::pin(response.bytes_stream()),
            pending: Vec::new(),
            taken: 0,
            after_cr: false,
            current: SseEvent::default(),
            fields: 0,
        }
    }

    /// [`connect`](Self::connect), resuming after the event numbered `last` when given.
    pub async fn connect_after(url: &str, last: Option<u64>) -> SseClient {
        SseClient::connect(url, last.map(|id| id.to_string()).as_deref()).await
    }

    /// The next event, whatever its name; panics after `within` without one, or if the server
    /// ended the stream.
    pub async fn next_within(&mut self, within: Duration) -> SseEvent {
        tokio::time::timeout(within, self.next_event())
            .await
            .unwrap_or_else(|_| panic!("no event within {within:?}"))
            .expect("the stream is open")
    }

    /// The next event not named `ping`; panics after 5 s without an event (a ping included),
    /// or if the server ended the stream.
    pub async fn next_not_ping(&mut self) -> SseEvent {
        loop {
            let event = self.next_within(READ_TIMEOUT).await;
            if !event.is_ping() {
                return event;
            }
        }
    }

    /// The next event not named `ping`, or `None` once the server ended the stream; panics
    /// when a read waits [`READ_TIMEOUT`] for bytes.
    pub async fn next_or_end(&mut self) -> Option<SseEvent> {
        loop {
            let event = self.next_event().await?;
            if !event.is_ping() {
                return Some(event);
            }
        }
    }

    /// The next event, or `None` once the server ended the stream (an event it left
    /// unfinished is dropped, as the standard's parser drops it).
    async fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            while let Some(line) = self.take_line() {
                if let Some(event) = self.line(&line) {
                    return Some(event);
                }
            }
            let chunk = tokio::time::timeout(READ_TIMEOUT, self.body.next())
                .await
                .unwrap_or_else(|_| panic!("no bytes within {READ_TIMEOUT:?}"))?
                .expect("the stream reads");
            self.pending.drain(..self.taken);
            self.taken = 0;
            self.pending.extend_from_slice(&chunk);
        }
    }

    /// The next whole line of `pending`, without its end.
    fn take_line(&mut self) -> Option<String> {
        if self.after_cr {
            match self.pending.get(self.taken) {
                // The CR's LF has not come yet, or will not: wait for more bytes.
                None => return None,
                Some(b'\n') => self.taken += 1,
                Some(_) => {}
            }
            self.after_cr = false;
        }
        let rest = &self.pending[self.taken..];
        let end = rest.iter().position(|b| *b == b'\n' || *b == b'\r')?;
        let line = String::from_utf8(rest[..end].to_vec()).expect("the stream is UTF-8");
        self.after_cr = rest[end] == b'\r';
        self.taken += end + 1;
        Some(line)
    }

    /// Takes one line in; a blank line hands over the event it ends, if any.
    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.current);
            let fields = std::mem::replace(&mut self.fields, 0);
            return (fields > 0).then_some(event);
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        self.fields += 1;
        match field {
            "id" if !value.contains('\0') => {
                let ticket = value.parse().unwrap_or_else(|_| {
                    panic!("the id is the stream's ticket, a number: {value:?}")
                });
                self.current.id = Some(ticket);
            }
            "event" => self.current.event = Some(value.to_owned()),
            "data" => match &mut self.current.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.current.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }
}
