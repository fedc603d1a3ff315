//! Reading a transcript: complete records only, deltas decoded front to back.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::lock::{LockError, TranscriptLock};
use super::{EndStatus, Header, Record, RecordedReply, apply_delta};
use crate::agent::events::{EventKind, Stats};
use crate::llm::Message;
use crate::review::finding::Finding;

/// Why a transcript cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// It could not be read.
    #[error("cannot read the transcript {path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// It has no complete header line.
    #[error("the transcript {0} has no header (the run wrote nothing)")]
    NoHeader(String),
    /// Another process is writing it (a run resumed twice at once).
    #[error(
        "the transcript {path} is being written by {holder} (a review of this run is still going); wait for it to end"
    )]
    Locked {
        /// The file.
        path: String,
        /// Who holds it (`process N`).
        holder: String,
    },
    /// It is larger than a transcript may be, or holds a record larger than a record may be.
    #[error("the transcript {path} is refused: {what}")]
    TooLarge {
        /// The file.
        path: String,
        /// Which limit it passes.
        what: String,
    },
    /// A line before the last one is not a record.
    #[error("the transcript {path} is damaged at line {line}: {error}")]
    Damaged {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        error: String,
    },
}

/// The largest transcript read, in bytes; the writer stops growing one here.
pub(crate) const MAX_TRANSCRIPT_BYTES: u64 = 128 << 20;

/// The largest record (one line) read or written, in bytes.
pub(crate) const MAX_RECORD_BYTES: usize = 4 << 20;

/// A transcript as read: its header and every complete record after it.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The header.
    pub header: Header,
    /// The records after the header, in file order.
    pub records: Vec<Record>,
    /// Bytes of complete records (a resumed run appends from here).
    pub valid_len: u64,
    /// Whether a cut last line was left out.
    pub cut_line: bool,
}

/// A transcript read while this process holds its lock: nothing else appends
/// to it until the lock (handed to the recorder that continues it) is dropped.
#[derive(Debug)]
pub struct LockedTranscript {
    pub(super) lock: TranscriptLock,
    /// The transcript as read under the lock.
    pub transcript: Transcript,
}

impl LockedTranscript {
    /// Locks `path` (refused, naming the holder, while another process writes it), then reads it.
    pub fn open(path: &Path) -> Result<LockedTranscript, TranscriptError> {
        let shown = path.display().to_string();
        let lock = TranscriptLock::open(path, false).map_err(|error| match error {
            LockError::Held(pid) => TranscriptError::Locked {
                path: shown.clone(),
                holder: LockError::holder(pid),
            },
            LockError::Io(error) => TranscriptError::Io {
                path: shown.clone(),
                error,
            },
        })?;
        let transcript = Transcript::read_from(lock.file(), shown)?;
        Ok(LockedTranscript { lock, transcript })
    }
}

/// One model call with its request rebuilt.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DecodedCall {
    /// The conversation.
    pub conversation: String,
    /// The call's place in it.
    pub seq: u32,
    /// The messages the model saw (after compression).
    pub messages: Vec<Message>,
    /// Tools offered natively.
    pub tools: Vec<String>,
    /// The reply.
    pub reply: RecordedReply,
}

impl Transcript {
    /// Reads `path`. A last line without its newline (or not parseable) is a write cut
    /// by a crash: it is left out and `valid_len` ends before it. Only a regular file
    /// of at most [`MAX_TRANSCRIPT_BYTES`] with records of at most [`MAX_RECORD_BYTES`] is read.
    pub fn read(path: &Path) -> Result<Transcript, TranscriptError> {
        let shown = path.display().to_string();
        let file = File::open(path).map_err(|error| TranscriptError::Io {
            path: shown.clone(),
            error,
        })?;
        Transcript::read_from(&file, shown)
    }

    fn read_from(file: &File, shown: String) -> Result<Transcript, TranscriptError> {
        let io = |error| TranscriptError::Io {
            path: shown.clone(),
            error,
        };
        if !file.metadata().map_err(io)?.is_file() {
            return Err(TranscriptError::TooLarge {
                path: shown,
                what: "it is not a regular file".into(),
            });
        }
        let mut bytes = Vec::new();
        file.take(MAX_TRANSCRIPT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 > MAX_TRANSCRIPT_BYTES {
            return Err(TranscriptError::TooLarge {
                path: shown,
                what: format!("it is larger than {} MiB", MAX_TRANSCRIPT_BYTES >> 20),
            });
        }
        Transcript::parse(&bytes, shown)
    }

    fn parse(bytes: &[u8], shown: String) -> Result<Transcript, TranscriptError> {
        let mut records = Vec::new();
        let mut valid_len = 0usize;
        let mut cut_line = false;
        let mut start = 0usize;
        let mut line_no = 0usize;
        while start < bytes.len() {
            line_no += 1;
            let Some(end) = bytes[start..].iter().position(|b| *b == b'\n') else {
                cut_line = true;
                break;
            };
            if end > MAX_RECORD_BYTES {
                return Err(TranscriptError::TooLarge {
                    path: shown,
                    what: format!(
                        "line {line_no} is larger than a record may be ({} MiB)",
                        MAX_RECORD_BYTES >> 20
                    ),
                });
            }
            let line = &bytes[start..start + end];
            let next = start + end + 1;
            match serde_json::from_slice::<Record>(line) {
                Ok(record) => records.push(record),
                Err(_) if next >= bytes.len() => {
                    cut_line = true;
                    break;
                }
                Err(error) => {
                    return Err(TranscriptError::Damaged {
                        path: shown,
                        line: line_no,
                        error: error.to_string(),
                    });
                }
            }
            valid_len = next;
            start = next;
        }
        let mut records = records.into_iter();
        let Some(Record::Header(header)) = records.next() else {
            return Err(TranscriptError::NoHeader(shown));
        };
        Ok(Transcript {
            header,
            records: records.collect(),
            valid_len: valid_len as u64,
            cut_line,
        })
    }

    /// Every model call with its messages rebuilt, in file order.
    pub(crate) fn decoded_calls(&self) -> Vec<DecodedCall> {
        let mut last: HashMap<&str, Vec<Message>> = HashMap::new();
        let mut calls = Vec::new();
        for record in &self.records {
            let Record::ModelCall(call) = record else {
                continue;
            };
            let previous = last.get(call.conversation.as_str()).map(Vec::as_slice);
            // A bad range can only come from an edited file; the call then shows what is known.
            let messages = apply_delta(previous.unwrap_or(&[]), &call.messages).unwrap_or_default();
            last.insert(&call.conversation, messages.clone());
            calls.push(DecodedCall {
                conversation: call.conversation.clone(),
                seq: call.seq,
                messages,
                tools: call.tools.clone(),
                reply: call.reply.clone(),
            });
        }
        calls
    }

    /// How many model calls it records.
    pub fn model_calls(&self) -> usize {
        self.records
            .iter()
            .filter(|r| matches!(r, Record::ModelCall(_)))
            .count()
    }

    /// How the run ended, if it did (the last end record counts).
    pub fn end(&self) -> Option<EndStatus> {
        self.records.iter().rev().find_map(|r| match r {
            Record::End { status, .. } => Some(*status),
            _ => None,
        })
    }

    /// The findings of the last finished run in it.
    pub fn findings(&self) -> Vec<Finding> {
        let mut findings = Vec::new();
        for record in &self.records {
            match record {
                Record::Resumed { .. } => findings.clear(),
                Record::Event {
                    event: EventKind::Finding(finding),
                } => findings.push(finding.clone()),
                _ => {}
            }
        }
        findings
    }

    /// The counters of the finished run, when it finished.
    pub(crate) fn final_stats(&self) -> Option<Stats> {
        self.records.iter().rev().find_map(|r| match r {
            Record::Event {
                event: EventKind::RunFinished { stats },
            } => Some(stats.clone()),
            _ => None,
        })
    }
}
