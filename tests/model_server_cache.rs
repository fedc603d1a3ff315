//! The scripted server's prompt-cache simulation, seen over the wire as an
//! OpenAI client sees it.

use serde_json::{Value, json};

use crate::common::model_server::prompt_cache::{cached_tokens_for_prefix, prompt_tokens};
use crate::common::model_server::{ModelServer, Reply, Wire};

/// The `usage` object of the last chunk carrying one, from an SSE body.
fn streamed_usage(sse: &str) -> Value {
    sse.lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter(|chunk| chunk["usage"].is_object())
        .map(|chunk| chunk["usage"].clone())
        .next()
        .unwrap_or(Value::Null)
}

fn request(system: &str, user: &str) -> Value {
    json!({"model": "gpt-4.1-mini", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]})
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[tokio::test]
async fn cached_tokens_are_reported_like_openai_for_prompts_sharing_a_long_prefix() {
    let server = ModelServer::start_with(Wire::OpenAi, |_, _| Reply::text("ok"))
        .await
        .with_prompt_cache();
    let long_system: String = (0..1_500).map(|i| format!("rule {i}; ")).collect();
    let bodies = [
        request(&long_system, "first change"),
        request(&long_system, "second change"),
        request("short system prompt", "third change"),
    ];
    let client = reqwest::Client::new();
    let mut usages = Vec::new();
    for body in &bodies {
        let sse = client
            .post(format!("{}/chat/completions", server.base_url()))
            .json(body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        usages.push(streamed_usage(&sse));
    }
    let tokens: Vec<Vec<u32>> = bodies.iter().map(prompt_tokens).collect();
    let shared = common_prefix(&tokens[0], &tokens[1]);
    assert!(shared > 1_024, "the long system prompt is a shared prefix");

    let cached = |i: usize| usages[i]["prompt_tokens_details"]["cached_tokens"].as_u64();
    assert_eq!(cached(0), Some(0), "the first request finds nothing cached");
    assert_eq!(cached(1), Some(cached_tokens_for_prefix(shared) as u64));
    assert_eq!(cached(1).unwrap() % 128, 0);
    assert_eq!(cached(2), Some(0), "a short shared prefix is not cached");
    for (usage, tokens) in usages.iter().zip(&tokens) {
        assert_eq!(usage["prompt_tokens"].as_u64(), Some(tokens.len() as u64));
    }

    let served = server.served_usage();
    assert_eq!(served.len(), 3);
    assert_eq!(served[1].cached_tokens, cached(1).unwrap());
    assert_eq!(served[1].request, 1);
}

#[tokio::test]
async fn without_the_option_no_cached_tokens_are_reported() {
    let server = ModelServer::start_with(Wire::OpenAi, |_, _| Reply::text("ok")).await;
    let long_system: String = (0..1_500).map(|i| format!("rule {i}; ")).collect();
    let client = reqwest::Client::new();
    for user in ["a", "b"] {
        let sse = client
            .post(format!("{}/chat/completions", server.base_url()))
            .json(&request(&long_system, user))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(streamed_usage(&sse)["prompt_tokens_details"].is_null());
    }
    assert!(server.served_usage().iter().all(|u| u.cached_tokens == 0));
}
