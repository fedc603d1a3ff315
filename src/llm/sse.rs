//! Server-sent events: splitting a byte stream into `event:`/`data:` records.
//!
//! Both providers stream their replies as SSE. The decoder is push-based so it
//! can be fed whatever chunks the network delivers (a line, or a UTF-8
//! character, may be split across chunks); [`SseStream`] drives it from an HTTP
//! response and turns transport failures into [`LlmError::StreamCut`] and
//! silent gaps into [`LlmError::Stalled`].
//!
//! Invariant: memory held for one event is bounded by [`MAX_EVENT_BYTES`]; a
//! server that streams an endless line or event fails the call instead.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use std::collections::VecDeque;
use std::pin::Pin;
use tokio::time::Instant;

use super::http::describe_transport_error;
use super::secret::Secret;
use super::{CallTimeouts, LlmError, Stall};

/// Largest event (or unterminated line) kept in memory. Real events are a
/// few hundred bytes; a whole tool call's arguments never come in one event.
pub(crate) const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, when the server named the event.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental SSE parser over raw bytes.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buffer: Vec<u8>,
    /// Bytes at the start of `buffer` known to hold no line end.
    scanned: usize,
    current: SseEvent,
    has_data: bool,
}

impl SseDecoder {
    /// Feeds a chunk and returns the events it completed.
    ///
    /// Lines end with `\n`, `\r\n` or a bare `\r`, as the specification allows; a `\r`
    /// that ends a chunk waits for the next one, which may start with its `\n`.
    /// Linear in the bytes fed, however they are chunked: bytes already searched
    /// for a line end are not searched again, and the buffer is compacted once per chunk.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut line_start = 0;
        let mut search_from = self.scanned;
        // Where a `\r` ending the buffer stands, when one does.
        let mut open_cr = None;
        while let Some(offset) = self.buffer[search_from..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = search_from + offset;
            let next = match (self.buffer[end], self.buffer.get(end + 1)) {
                (b'\r', None) => {
                    // Is it `\r\n`? The next chunk tells.
                    open_cr = Some(end);
                    break;
                }
                (b'\r', Some(b'\n')) => end + 2,
                _ => end + 1,
            };
            let line = String::from_utf8_lossy(&self.buffer[line_start..end]).into_owned();
            if let Some(event) = self.take_line(&line) {
                events.push(event);
            }
            line_start = next;
            search_from = line_start;
        }
        self.buffer.drain(..line_start);
        self.scanned = open_cr.map_or(self.buffer.len(), |at| at - line_start);
        events
    }

    /// Flushes an event the server left unterminated when the stream ended.
    ///
    /// The SSE specification discards such an event; some servers close the
    /// connection right after `data: [DONE]\n`, so it is kept when it has data.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.buffer.is_empty() {
            self.scanned = 0;
            let rest = std::mem::take(&mut self.buffer);
            let line = String::from_utf8_lossy(trim_line_ending(&rest)).into_owned();
            if let Some(event) = self.take_line(&line) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    /// Bytes held for the event being assembled and the line being read.
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.buffer.len() + self.current.data.len()
    }

    fn take_line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None; // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.current.event = Some(value.to_string()),
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            _ => {} // id, retry and unknown fields do not matter here
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.current);
        let had_data = std::mem::replace(&mut self.has_data, false);
        had_data.then_some(event)
    }
}

fn trim_line_ending(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// The events of one streamed HTTP response.
pub(crate) struct SseStream {
    body: ByteStream,
    decoder: SseDecoder,
    pending: VecDeque<SseEvent>,
    first_byte_deadline: Instant,
    timeouts: CallTimeouts,
    started: bool,
    key: Option<Secret>,
    ended: bool,
    /// Events handed out so far.
    events: usize,
}

impl SseStream {
    /// Reads events from a successful response. The first chunk must arrive by
    /// `first_byte_deadline` (the request was sent `timeouts.first_byte` before
    /// it), and no later gap between chunks may be longer than `timeouts.stream_idle`.
    pub fn new(
        response: reqwest::Response,
        first_byte_deadline: Instant,
        timeouts: CallTimeouts,
        key: Option<Secret>,
    ) -> Self {
        SseStream {
            body: Box::pin(response.bytes_stream()),
            decoder: SseDecoder::default(),
            pending: VecDeque::new(),
            first_byte_deadline,
            timeouts,
            started: false,
            key,
            ended: false,
            events: 0,
        }
    }

    /// The next event; `Ok(None)` once the server closed the stream normally. A body that
    /// ends without a single event is no stream at all (an HTML page, a wrong base URL):
    /// an error saying so, rather than a stream cut off.
    pub(crate) async fn next_event(&mut self) -> Result<Option<SseEvent>, LlmError> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.events += 1;
                return Ok(Some(event));
            }
            if self.ended && self.events == 0 {
                return Err(LlmError::Malformed(
                    "the model server answered 200 with a body that holds no server-sent \
                     events; is the base URL an OpenAI-compatible or Anthropic API?"
                        .to_string(),
                ));
            }
            if self.ended {
                return Ok(None);
            }
            self.read_chunk().await?;
        }
    }

    async fn read_chunk(&mut self) -> Result<(), LlmError> {
        let next = if self.started {
            tokio::time::timeout(self.timeouts.stream_idle, self.body.next())
                .await
                .map_err(|_| LlmError::Stalled {
                    phase: Stall::StreamIdle,
                    after: self.timeouts.stream_idle,
                })?
        } else {
            tokio::time::timeout_at(self.first_byte_deadline, self.body.next())
                .await
                .map_err(|_| LlmError::Stalled {
                    phase: Stall::FirstByte,
                    after: self.timeouts.first_byte,
                })?
        };
        self.started = true;
        match next {
            Some(Ok(chunk)) => {
                self.pending.extend(self.decoder.push(&chunk));
                if self.decoder.buffered_bytes() > MAX_EVENT_BYTES {
                    return Err(LlmError::Malformed(format!(
                        "a stream event is larger than {MAX_EVENT_BYTES} bytes"
                    )));
                }
            }
            Some(Err(err)) => {
                return Err(LlmError::StreamCut(describe_transport_error(
                    &err,
                    self.key.as_ref(),
                )));
            }
            None => {
                self.ended = true;
                self.pending.extend(self.decoder.finish());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &str, piece: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        for chunk in input.as_bytes().chunks(piece) {
            events.extend(decoder.push(chunk));
        }
        events.extend(decoder.finish());
        events
    }

    #[test]
    fn splits_events_whatever_the_chunking() {
        let input = "event: ping\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: héllo\r\ndata: wörld\r\n\r\ndata: [DONE]\n\n";
        let expected = vec![
            SseEvent {
                event: Some("ping".into()),
                data: "{\"a\":1}".into(),
            },
            SseEvent {
                event: None,
                data: "héllo\nwörld".into(),
            },
            SseEvent {
                event: None,
                data: "[DONE]".into(),
            },
        ];
        for piece in [1, 2, 3, 7, input.len()] {
            assert_eq!(decode_in_pieces(input, piece), expected, "piece {piece}");
        }
    }

    #[test]
    fn a_bare_carriage_return_ends_a_line_too() {
        let input = "event: ping\rdata: a\rdata: b\r\rdata: c\r\n\r\ndata: d\n\r";
        let expected = vec![
            SseEvent {
                event: Some("ping".into()),
                data: "a\nb".into(),
            },
            SseEvent {
                event: None,
                data: "c".into(),
            },
            SseEvent {
                event: None,
                data: "d".into(),
            },
        ];
        for piece in [1, 2, 3, 5, input.len()] {
            assert_eq!(decode_in_pieces(input, piece), expected, "piece {piece}");
        }
    }

    #[test]
    fn fuzzed_streams_decode_without_panics_and_within_their_size() {
        let seeds: &[&[u8]] = &[
            b"event: message_start\ndata: {\"type\":\"message_start\"}\n\n: ping\n\ndata: a\r\ndata: b\r\n\r\n",
            b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]",
        ];
        let tokens = [
            "\n", "\r", "\r\n", "data:", "data: ", "event:", ":", "id: 1\n", "\u{fe0f}",
        ];
        let mut pieces = 0usize;
        crate::fuzzing::fuzz("sse decoder", 0x55e, seeds, &tokens, |input| {
            pieces = pieces % 7 + 1;
            let mut decoder = SseDecoder::default();
            let mut events = Vec::new();
            for chunk in input.chunks(pieces) {
                events.extend(decoder.push(chunk));
                assert!(decoder.buffered_bytes() <= input.len() * 3);
            }
            events.extend(decoder.finish());
            let out: usize = events
                .iter()
                .map(|e| e.data.len() + e.event.as_ref().map_or(0, String::len))
                .sum();
            crate::fuzzing::assert_bounded("sse events", input.len(), out, 3, 0);
        });
    }

    #[test]
    fn keeps_an_unterminated_final_event() {
        assert_eq!(
            decode_in_pieces("data: [DONE]", 4),
            vec![SseEvent {
                event: None,
                data: "[DONE]".into()
            }]
        );
        assert_eq!(decode_in_pieces("event: x\n", 4), vec![]);
    }
}
