use std::sync::Arc;

use async_trait::async_trait;

use super::*;
use crate::llm::{ChatModel, LlmError, Secret, ToolSpec};
use crate::tools::Observation;

fn tool_message(id: &str, content: &str) -> Message {
    Message::Tool {
        call_id: id.into(),
        name: "read_file".into(),
        content: content.into(),
        is_error: false,
    }
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        messages,
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}),
        }],
        max_tokens: 100,
        temperature: None,
    }
}

#[test]
fn delta_round_trips_appends_pruning_and_compaction() {
    let previous = vec![
        Message::system("s"),
        Message::user("task"),
        tool_message("a", "long result"),
        Message::user("more"),
    ];
    let current = vec![
        Message::system("s"),
        Message::user("task"),
        tool_message("a", "[pruned]"),
        Message::user("more"),
        Message::user("new"),
    ];
    let ops = delta(&previous, &current);
    assert_eq!(apply_delta(&previous, &ops), Some(current.clone()));
    // Unchanged runs are references, not copies.
    assert_eq!(ops[0], MessageOp::Keep([0, 2]));
    assert_eq!(
        ops.iter()
            .filter(|o| matches!(o, MessageOp::New(_)))
            .count(),
        2
    );
    // Out-of-range references are refused, not panicked on.
    assert_eq!(apply_delta(&[], &ops), None);
}

#[test]
fn request_key_ignores_the_reply_allowance_only() {
    let a = request(vec![Message::user("x")]);
    let mut b = a.clone();
    b.max_tokens = 7;
    assert_eq!(request_key(&a), request_key(&b));
    b.messages.push(Message::user("y"));
    assert_ne!(request_key(&a), request_key(&b));
    assert_eq!(conversation_of(&a.messages), conversation_of(&b.messages));
}

fn header(run_id: &str) -> Header {
    Header {
        format: FORMAT_VERSION,
        redline: "0".into(),
        run_id: run_id.into(),
        created: "now".into(),
        strategy: "react".into(),
        settings_digest: "d1".into(),
        repository: RepositoryIdentity {
            root: "/r".into(),
            origin: None,
        },
        base: "b".into(),
        head: "h".into(),
        uncommitted: false,
        model: "m".into(),
        provider: "openai".into(),
        invocation: vec![],
        intent: String::new(),
    }
}

struct Scripted(
    std::sync::Mutex<Vec<String>>,
    std::sync::atomic::AtomicUsize,
);

#[async_trait]
impl ChatModel for Scripted {
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let text = self.0.lock().unwrap().remove(0);
        Ok(ChatResponse {
            content: text,
            tool_calls: vec![],
            usage: Default::default(),
            stop: StopReason::EndTurn,
        })
    }
}

#[tokio::test]
async fn a_resumed_transcript_answers_recorded_calls_and_appends_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    let secret = Secret::new("sk-very-secret-key-123456");
    let model = Arc::new(Scripted(
        std::sync::Mutex::new(vec![
            "one sk-very-secret-key-123456".into(),
            "two".into(),
            "three".into(),
        ]),
        Default::default(),
    ));
    let first = request(vec![Message::system("s"), Message::user("task")]);
    let mut second = first.clone();
    second.messages.push(Message::user("next"));
    {
        let recorder =
            Arc::new(Recorder::create(&path, &header("r"), Some(secret.clone())).unwrap());
        let recording = RecordingModel::new(model.clone(), recorder.clone());
        recording.complete(&first).await.unwrap();
        recorder.tool_result(
            &ToolCall {
                id: "c".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            },
            &Observation {
                content: "body".into(),
                is_error: false,
            },
        );
        recording.complete(&second).await.unwrap();
    }
    // A crash cut the last line in the middle.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("sk-very-secret"), "{text}");
    std::fs::write(&path, &text[..text.len() - 10]).unwrap();
    let transcript = Transcript::read(&path).unwrap();
    assert!(transcript.cut_line);
    assert_eq!(transcript.model_calls(), 1);

    let locked = LockedTranscript::open(&path).unwrap();
    let recorder = Arc::new(Recorder::resume(locked, Some(secret)).unwrap());
    let recording = RecordingModel::new(model.clone(), recorder.clone());
    let reply = recording.complete(&first).await.unwrap();
    assert!(
        reply.content.starts_with("one"),
        "answered from the transcript"
    );
    let call = ToolCall {
        id: "c".into(),
        name: "read_file".into(),
        arguments: "{}".into(),
    };
    assert_eq!(
        recorder.recorded_tool_result(&call).unwrap().content,
        "body"
    );
    // The call cut off by the crash goes to the model again.
    assert_eq!(recording.complete(&second).await.unwrap().content, "three");
    assert_eq!(recorder.replayed_calls(), 1);
    assert_eq!(recorder.live_calls(), 1);
    assert_eq!(model.1.load(std::sync::atomic::Ordering::Relaxed), 3);

    let again = Transcript::read(&path).unwrap();
    assert!(!again.cut_line);
    let calls = again.decoded_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].messages, second.messages);
}

#[test]
fn differences_name_what_differs() {
    let a = header("r");
    let mut b = a.clone();
    assert!(a.differences(&b).is_empty());
    b.head = "other".into();
    b.settings_digest = "d2".into();
    let differs = a.differences(&b).join("; ");
    assert!(differs.contains("head commit h (now other)"), "{differs}");
    assert!(differs.contains("settings digest"), "{differs}");
}

#[test]
fn a_transcript_is_written_by_one_process_at_a_time_and_only_its_owner_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    let recorder = Recorder::create(&path, &header("r"), None).unwrap();
    let pid_file = lock::pid_path(&path);
    assert_eq!(
        std::fs::read_to_string(&pid_file).unwrap().trim(),
        std::process::id().to_string()
    );
    let refused = LockedTranscript::open(&path).unwrap_err().to_string();
    assert!(
        refused.contains(&format!("being written by process {}", std::process::id())),
        "{refused}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    drop(recorder);
    assert!(!pid_file.exists());
    let resumed = Recorder::resume(LockedTranscript::open(&path).unwrap(), None).unwrap();
    assert!(
        LockedTranscript::open(&path).is_err(),
        "the resumed run holds it"
    );
    drop(resumed);
    assert!(LockedTranscript::open(&path).is_ok());
}

#[test]
fn records_go_to_the_end_of_the_file_whatever_another_handle_wrote() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    drop(Recorder::create(&path, &header("r"), None).unwrap());
    let recorder = Recorder::resume(LockedTranscript::open(&path).unwrap(), None).unwrap();
    // A writer that ignores the advisory lock appends a record meanwhile.
    let mut other = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let line = serde_json::to_string(&Record::End {
        status: EndStatus::Cancelled,
        error: None,
    })
    .unwrap();
    writeln!(other, "{line}").unwrap();
    recorder.end(EndStatus::Finished, None);
    let transcript = Transcript::read(&path).unwrap();
    assert!(!transcript.cut_line);
    let kinds: Vec<String> = transcript
        .records
        .iter()
        .map(|r| serde_json::to_value(r).unwrap()["record"].to_string())
        .collect();
    assert_eq!(kinds, ["\"resumed\"", "\"end\"", "\"end\""]);
    assert_eq!(transcript.end(), Some(EndStatus::Finished));
}

#[test]
fn oversized_records_transcripts_and_devices_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    drop(Recorder::create(&path, &header("r"), None).unwrap());
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "{{\"record\":\"end\",\"status\":\"failed\",\"error\":\"{}\"}}\n",
        "x".repeat(MAX_RECORD_BYTES)
    ));
    text.push_str("{\"record\":\"end\",\"status\":\"finished\"}\n");
    std::fs::write(&path, &text).unwrap();
    let error = Transcript::read(&path).unwrap_err().to_string();
    assert!(error.contains("line 2 is larger than a record"), "{error}");
    let error = LockedTranscript::open(&path).unwrap_err().to_string();
    assert!(error.contains("line 2 is larger than a record"), "{error}");
    #[cfg(unix)]
    {
        let error = Transcript::read(std::path::Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a regular file"), "{error}");
    }
    // A recorder stops a transcript before it would pass the reader's limit.
    let path = dir.path().join("s.jsonl");
    let recorder = Recorder::create(&path, &header("s"), None).unwrap();
    recorder.end(EndStatus::Failed, Some("y".repeat(MAX_RECORD_BYTES)));
    recorder.end(EndStatus::Finished, None);
    drop(recorder);
    let transcript = Transcript::read(&path).unwrap();
    assert!(transcript.records.is_empty(), "{:?}", transcript.records);
}

#[cfg(unix)]
#[test]
fn state_directories_are_created_for_their_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("state/redline/runs");
    lock::create_private_dir(&runs).unwrap();
    for path in [dir.path().join("state"), runs] {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{}", path.display());
    }
}
