//! A server-sent event client over reqwest's byte stream, reading the stream as the HTML
//! standard's parser does (lines end in LF, CRLF or CR; `field: value` with one optional space
//! after the colon; `:` starts a comment; a blank line ends an event), and handing over every
//! event, a dataless one included, as a Spring `ServerSentEvent` reader does (a browser's
//! `EventSource` drops an event without data).

use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};

/// One event: its fields as the stream sent them, `None` for a field it did not send.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    /// The `data:` lines joined by `\n`; `None` when the event had no `data:` line.
    pub data: Option<String>,
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>;

/// An open event stream.
pub struct SseClient {
    body: Body,
    /// Bytes received and not yet split into lines.
    pending: Vec<u8>,
    /// The last line ended with CR: an LF that starts the next bytes belongs to it.
    after_cr: bool,
    /// The event being read.
    current: SseEvent,
    /// Lines of the current event seen (a comment-only block is no event).
    fields: usize,
}

impl SseClient {
    /// GET `url` with `Accept: text/event-stream` (and `Last-Event-ID` when given); the answer
    /// must be a 200 event stream.
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
            after_cr: false,
            current: SseEvent::default(),
            fields: 0,
        }
    }

    /// The next event, whatever its name; panics after `within` without one.
    pub async fn next_within(&mut self, within: Duration) -> SseEvent {
        tokio::time::timeout(within, self.next_event())
            .await
            .unwrap_or_else(|_| panic!("no event within {within:?}"))
    }

    /// The next event not named `ping`, as a client of Resilience4j's stream filters its
    /// heartbeat out by name; panics after 5 s without one.
    pub async fn next_not_ping(&mut self) -> SseEvent {
        loop {
            let event = self.next_within(Duration::from_secs(5)).await;
            if event.event.as_deref() != Some("ping") {
                return event;
            }
        }
    }

    async fn next_event(&mut self) -> SseEvent {
        loop {
            while let Some(line) = self.take_line() {
                if let Some(event) = self.line(&line) {
                    return event;
                }
            }
            let chunk = self
                .body
                .next()
                .await
                .expect("the stream is open")
                .expect("the stream reads");
            self.pending.extend_from_slice(&chunk);
        }
    }

    /// The next whole line of `pending`, without its end.
    fn take_line(&mut self) -> Option<String> {
        if self.after_cr {
            match self.pending.first() {
                // The CR's LF has not come yet, or will not: wait for more bytes.
                None => return None,
                Some(b'\n') => {
                    self.pending.remove(0);
                }
                Some(_) => {}
            }
            self.after_cr = false;
        }
        let end = self
            .pending
            .iter()
            .position(|b| *b == b'\n' || *b == b'\r')?;
        let line: Vec<u8> = self.pending.drain(..end).collect();
        match self.pending.remove(0) {
            b'\r' if self.pending.first() == Some(&b'\n') => {
                self.pending.remove(0);
            }
            b'\r' => self.after_cr = true,
            _ => {}
        }
        Some(String::from_utf8(line).expect("the stream is UTF-8"))
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
            "id" if !value.contains('\0') => self.current.id = Some(value.to_owned()),
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
