//! Writing a transcript, and answering from one: the [`Recorder`] the
//! orchestrator and the [`RecordingModel`] report to.
//!
//! Invariant: a request answered from the transcript is not written again, and
//! the delta state of each conversation always equals what a reader has decoded
//! from the file so far (it is primed from the file when a run resumes).

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::lock::TranscriptLock;
use super::read::{LockedTranscript, MAX_RECORD_BYTES, MAX_TRANSCRIPT_BYTES, Transcript};
use super::{
    EndStatus, Header, ModelCallRecord, Record, RecordedError, RecordedReply, ToolResultRecord,
    conversation_of, delta, request_key, tool_key,
};
use crate::agent::events::{EventKind, EventTap};
use crate::llm::{ChatModel, ChatRequest, ChatResponse, LlmError, Message, Secret, ToolCall};
use crate::tools::Observation;

/// Hears what a run does and writes it to its transcript; answers from a
/// previous transcript what that one already holds.
pub struct Recorder {
    run_id: String,
    writer: Option<Mutex<Writer>>,
    book: Mutex<Book>,
    /// Whether a request that matches no recorded one exactly may be answered by
    /// the recorded call at the same place of its conversation (offline replay).
    by_position: bool,
    seqs: Mutex<HashMap<String, u32>>,
    replayed_calls: AtomicUsize,
    live_calls: AtomicUsize,
    reused_tools: AtomicUsize,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

struct Writer {
    lock: TranscriptLock,
    secret: Option<Secret>,
    /// Per conversation, the messages of its last call in the file.
    last: HashMap<String, Vec<Message>>,
    bytes: u64,
    /// A write failed: the transcript stops growing (the review goes on).
    broken: bool,
}

/// One recorded answer: the reply, or the error the orchestrator reacted to.
struct BookCall {
    answer: Result<RecordedReply, RecordedError>,
    used: bool,
}

/// Recorded replies and tool results, each used at most once.
#[derive(Default)]
struct Book {
    calls: Vec<BookCall>,
    by_key: HashMap<String, VecDeque<usize>>,
    by_position: HashMap<(String, u32), usize>,
    tools: HashMap<String, VecDeque<(String, bool)>>,
}

impl Book {
    fn of(transcript: &Transcript) -> Book {
        let mut book = Book::default();
        for record in &transcript.records {
            match record {
                Record::ModelCall(call) => book.add(
                    &call.key,
                    &call.conversation,
                    call.seq,
                    Ok(call.reply.clone()),
                ),
                Record::ModelError {
                    conversation,
                    seq,
                    key,
                    error,
                } => book.add(key, conversation, *seq, Err(error.clone())),
                Record::ToolResult(result) => book
                    .tools
                    .entry(result.key.clone())
                    .or_default()
                    .push_back((result.content.clone(), result.is_error)),
                _ => {}
            }
        }
        book
    }

    fn add(
        &mut self,
        key: &str,
        conversation: &str,
        seq: u32,
        answer: Result<RecordedReply, RecordedError>,
    ) {
        let index = self.calls.len();
        self.calls.push(BookCall {
            answer,
            used: false,
        });
        self.by_key
            .entry(key.to_string())
            .or_default()
            .push_back(index);
        self.by_position
            .insert((conversation.to_string(), seq), index);
    }

    fn take(
        &mut self,
        key: &str,
        position: Option<(String, u32)>,
    ) -> Option<Result<RecordedReply, RecordedError>> {
        let exact = self.by_key.get_mut(key).and_then(|queue| {
            while let Some(index) = queue.pop_front() {
                if !self.calls[index].used {
                    return Some(index);
                }
            }
            None
        });
        let index = exact.or_else(|| {
            position
                .and_then(|p| self.by_position.get(&p).copied())
                .filter(|i| !self.calls[*i].used)
        })?;
        self.calls[index].used = true;
        Some(self.calls[index].answer.clone())
    }
}

impl Recorder {
    /// A new transcript at `path` (which must not exist; created 0600 and locked
    /// while the recorder lives), starting with `header`.
    pub fn create(path: &Path, header: &Header, secret: Option<Secret>) -> std::io::Result<Self> {
        let lock = TranscriptLock::open(path, true)?;
        let recorder = Recorder::with_writer(
            header.run_id.clone(),
            Writer::new(lock, secret, 0),
            Book::default(),
        );
        recorder.write(&Record::Header(header.clone()));
        Ok(recorder)
    }

    /// Continues a transcript read under its lock (kept while the recorder lives):
    /// its calls and tool results answer again, new ones are appended after its
    /// last complete record.
    pub fn resume(locked: LockedTranscript, secret: Option<Secret>) -> std::io::Result<Self> {
        let LockedTranscript { lock, transcript } = locked;
        // A line cut by the crash is dropped before anything is appended.
        lock.file().set_len(transcript.valid_len)?;
        let mut writer = Writer::new(lock, secret, transcript.valid_len);
        for call in transcript.decoded_calls() {
            writer.last.insert(call.conversation, call.messages);
        }
        let recorder = Recorder::with_writer(
            transcript.header.run_id.clone(),
            writer,
            Book::of(&transcript),
        );
        recorder.write(&Record::Resumed {
            at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            recorded_calls: transcript.model_calls(),
        });
        Ok(recorder)
    }

    /// Answers from `transcript` and writes nothing (offline replay); a request
    /// the transcript lacks is answered by the call at its place in its conversation.
    pub fn replay(transcript: &Transcript) -> Self {
        Recorder {
            by_position: true,
            ..Recorder::new(transcript.header.run_id.clone(), None, Book::of(transcript))
        }
    }

    fn with_writer(run_id: String, writer: Writer, book: Book) -> Self {
        Recorder::new(run_id, Some(Mutex::new(writer)), book)
    }

    fn new(run_id: String, writer: Option<Mutex<Writer>>, book: Book) -> Self {
        Recorder {
            run_id,
            writer,
            book: Mutex::new(book),
            by_position: false,
            seqs: Mutex::new(HashMap::new()),
            replayed_calls: AtomicUsize::new(0),
            live_calls: AtomicUsize::new(0),
            reused_tools: AtomicUsize::new(0),
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Model calls answered from the transcript so far.
    pub(crate) fn replayed_calls(&self) -> usize {
        self.replayed_calls.load(Ordering::Relaxed)
    }

    /// Model calls that went to the model so far.
    pub(crate) fn live_calls(&self) -> usize {
        self.live_calls.load(Ordering::Relaxed)
    }

    /// Tool results taken from the transcript so far.
    pub(crate) fn reused_tools(&self) -> usize {
        self.reused_tools.load(Ordering::Relaxed)
    }

    /// A tap for the run's [`crate::agent::events::EventSink`] that keeps the events worth keeping.
    pub(crate) fn tap(self: &Arc<Self>) -> EventTap {
        let recorder = Arc::clone(self);
        Arc::new(move |kind: &EventKind| {
            let keep = !matches!(
                kind,
                EventKind::ModelCall { .. }
                    | EventKind::ModelWaiting { .. }
                    | EventKind::ModelRetry { .. }
                    | EventKind::ToolCall { .. }
                    | EventKind::ToolResult { .. }
            );
            if keep {
                recorder.write(&Record::Event {
                    event: kind.clone(),
                });
            }
        })
    }

    /// The recorded result of `call`, if the transcript holds one.
    pub(crate) fn recorded_tool_result(&self, call: &ToolCall) -> Option<Observation> {
        let key = tool_key(call);
        let mut book = self.book.lock().ok()?;
        let (content, is_error) = book.tools.get_mut(&key)?.pop_front()?;
        self.reused_tools.fetch_add(1, Ordering::Relaxed);
        Some(Observation { content, is_error })
    }

    /// Records a tool call's observation.
    pub fn tool_result(&self, call: &ToolCall, observation: &Observation) {
        self.write(&Record::ToolResult(ToolResultRecord {
            key: tool_key(call),
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            content: observation.content.clone(),
            is_error: observation.is_error,
        }));
    }

    /// Records how the run ended.
    pub fn end(&self, status: EndStatus, error: Option<String>) {
        self.write(&Record::End { status, error });
    }

    /// The place of a new call in its conversation.
    fn next_seq(&self, conversation: &str) -> u32 {
        let Ok(mut seqs) = self.seqs.lock() else {
            return 0;
        };
        let seq = seqs.entry(conversation.to_string()).or_insert(0);
        *seq += 1;
        *seq
    }

    fn answer(
        &self,
        key: &str,
        conversation: &str,
        seq: u32,
    ) -> Option<Result<ChatResponse, LlmError>> {
        let position = self.by_position.then(|| (conversation.to_string(), seq));
        let answer = self.book.lock().ok()?.take(key, position)?;
        self.replayed_calls.fetch_add(1, Ordering::Relaxed);
        Some(
            answer
                .map(|reply| reply.to_response())
                .map_err(|error| error.to_error()),
        )
    }

    fn model_error(&self, conversation: String, seq: u32, key: String, error: &LlmError) {
        if let Some(error) = RecordedError::of(error) {
            self.write(&Record::ModelError {
                conversation,
                seq,
                key,
                error,
            });
        }
    }

    fn model_call(
        &self,
        conversation: String,
        seq: u32,
        key: String,
        request: &ChatRequest,
        reply: &ChatResponse,
    ) {
        let Some(writer) = &self.writer else { return };
        let Ok(mut writer) = writer.lock() else {
            return;
        };
        let previous = writer
            .last
            .get(&conversation)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let record = Record::ModelCall(ModelCallRecord {
            messages: delta(previous, &request.messages),
            conversation: conversation.clone(),
            seq,
            key,
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
            reply: RecordedReply::of(reply),
        });
        writer.write(&record);
        writer.last.insert(conversation, request.messages.clone());
    }

    fn write(&self, record: &Record) {
        if let Some(writer) = &self.writer
            && let Ok(mut writer) = writer.lock()
        {
            writer.write(record);
        }
    }
}

impl Writer {
    fn new(lock: TranscriptLock, secret: Option<Secret>, bytes: u64) -> Self {
        Writer {
            lock,
            secret,
            last: HashMap::new(),
            bytes,
            broken: false,
        }
    }

    fn write(&mut self, record: &Record) {
        if self.broken {
            return;
        }
        let Ok(mut line) = serde_json::to_string(record) else {
            return;
        };
        if let Some(secret) = &self.secret {
            line = secret.redact(&line);
        }
        line.push('\n');
        // What is written can be read back: a record or a transcript past the
        // reader's limits ends the transcript here (the review goes on).
        if line.len() > MAX_RECORD_BYTES || self.bytes + line.len() as u64 > MAX_TRANSCRIPT_BYTES {
            self.broken = true;
            tracing::warn!("the run's transcript stops here: it would pass its size limit");
            return;
        }
        // One `O_APPEND` write per line and no user-space buffer: a crash loses at
        // most the line in flight, and a short write ends the transcript.
        match self.lock.file().write(line.as_bytes()) {
            Ok(written) if written == line.len() => self.bytes += line.len() as u64,
            Ok(_) => {
                self.broken = true;
                tracing::warn!("the run's transcript could not be written whole");
            }
            Err(error) => {
                self.broken = true;
                tracing::warn!("the run's transcript could not be written: {error}");
            }
        }
    }
}

/// A model client that answers from the recorder's transcript when it can, and
/// otherwise asks `inner` and records the call.
pub(crate) struct RecordingModel {
    inner: Arc<dyn ChatModel>,
    recorder: Arc<Recorder>,
}

impl RecordingModel {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn ChatModel>, recorder: Arc<Recorder>) -> Self {
        RecordingModel { inner, recorder }
    }
}

#[async_trait]
impl ChatModel for RecordingModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let conversation = conversation_of(&request.messages);
        let seq = self.recorder.next_seq(&conversation);
        let key = request_key(request);
        if let Some(answer) = self.recorder.answer(&key, &conversation, seq) {
            return answer;
        }
        let reply = match self.inner.complete(request).await {
            Ok(reply) => reply,
            Err(error) => {
                self.recorder.model_error(conversation, seq, key, &error);
                return Err(error);
            }
        };
        self.recorder.live_calls.fetch_add(1, Ordering::Relaxed);
        self.recorder
            .model_call(conversation, seq, key, request, &reply);
        Ok(reply)
    }
}
