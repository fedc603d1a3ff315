use std::time::Duration;

use futures::stream;

use super::*;
use crate::llm::Secret;
use crate::server::signature::sign;

const SECRET: &str = "body-test-secret";

fn budget() -> UnverifiedBudget {
    UnverifiedBudget::new(1 << 20, Duration::from_millis(50))
}

fn check_for(body: &[u8]) -> SignatureCheck {
    let secret = Secret::new(SECRET.to_string());
    let header = sign(&secret, body);
    SignatureCheck::begin(&secret, Some(header.as_str())).expect("well-formed header")
}

/// Lets the spawned reads run until `budget` has `available` bytes free, and checks it
/// (a reservation of another size fails here instead of waiting forever).
async fn settle(budget: &UnverifiedBudget, available: usize) {
    for _ in 0..10_000 {
        if budget.available() == available {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(budget.available(), available);
}

fn in_pieces(body: &[u8], size: usize) -> Body {
    let pieces: Vec<Result<Bytes, std::io::Error>> = body
        .chunks(size)
        .map(|piece| Ok(Bytes::copy_from_slice(piece)))
        .collect();
    Body::from_stream(stream::iter(pieces))
}

async fn read(
    body: Body,
    declared: Option<usize>,
    check: SignatureCheck,
) -> Result<Bytes, BodyError> {
    let declared = declared.map(|len| len as u64);
    read_verified(body, declared, &RequestLimits::default(), &budget(), check).await
}

#[tokio::test]
async fn a_body_in_one_piece_or_many_reads_the_same_and_verifies() {
    let body: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    let whole = read(Body::from(body.clone()), Some(body.len()), check_for(&body)).await;
    assert_eq!(whole.expect("one piece").as_ref(), body.as_slice());
    let pieces = read(in_pieces(&body, 4096), Some(body.len()), check_for(&body)).await;
    assert_eq!(pieces.expect("many pieces").as_ref(), body.as_slice());
    let chunked = read(in_pieces(&body, 1000), None, check_for(&body)).await;
    assert_eq!(
        chunked.expect("no announced length").as_ref(),
        body.as_slice()
    );
}

#[tokio::test]
async fn a_tampered_body_is_refused_whether_it_came_whole_or_in_pieces() {
    let signed = b"{\"action\":\"opened\"}".to_vec();
    let mut sent = signed.clone();
    sent[3] ^= 1;
    let whole = read(
        Body::from(sent.clone()),
        Some(sent.len()),
        check_for(&signed),
    )
    .await;
    assert!(matches!(whole, Err(BodyError::Signature(_))), "{whole:?}");
    let pieces = read(in_pieces(&sent, 5), Some(sent.len()), check_for(&signed)).await;
    assert!(matches!(pieces, Err(BodyError::Signature(_))), "{pieces:?}");
}

#[tokio::test]
async fn bytes_past_the_announced_length_are_hashed_once_and_counted() {
    // A first piece of exactly the announced length, then more: the whole body, hashed once,
    // is what the signature must match.
    let body = b"0123456789abcdef".to_vec();
    let pieces: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::copy_from_slice(&body[..10])),
        Ok(Bytes::copy_from_slice(&body[10..])),
    ];
    let read_back = read(
        Body::from_stream(stream::iter(pieces)),
        Some(10),
        check_for(&body),
    )
    .await;
    assert_eq!(read_back.expect("verified").as_ref(), body.as_slice());
}

/// Two bodies of unannounced length that together need more than the budget: the one that
/// cannot grow is refused as busy at once (it does not wait holding part of the budget), the
/// other is read and verified, and the whole budget is free afterwards.
#[tokio::test]
async fn a_body_that_cannot_grow_is_refused_and_the_other_is_read() {
    let total = 600 * 1024;
    let budget = UnverifiedBudget::new(total, Duration::from_secs(10));
    let body: Vec<u8> = (0..500 * 1024u32).map(|i| (i % 251) as u8).collect();
    let pieces: Vec<Bytes> = body.chunks(8192).map(Bytes::copy_from_slice).collect();
    let start = |held_after: usize| {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, std::io::Error>>();
        let (budget, check) = (budget.clone(), check_for(&body));
        let task = tokio::spawn(async move {
            let limits = RequestLimits::default();
            read_verified(Body::from_stream(rx), None, &limits, &budget, check).await
        });
        (tx, task, held_after)
    };
    let (second_tx, second, held) = start(total - FIRST_RESERVATION);
    settle(&budget, held).await;
    let (first_tx, first, held) = start(total - 2 * FIRST_RESERVATION);
    settle(&budget, held).await;
    // The first body grows step by step until the room left (the second one holds its
    // first reservation) is not enough for its next step.
    for piece in &pieces {
        first_tx.unbounded_send(Ok(piece.clone())).unwrap();
    }
    assert_eq!(first.await.unwrap(), Err(BodyError::Busy));
    for piece in &pieces {
        second_tx.unbounded_send(Ok(piece.clone())).unwrap();
    }
    drop(second_tx);
    assert_eq!(second.await.unwrap().map(|b| b.len()), Ok(body.len()));
    assert_eq!(budget.available(), total);
}

/// A peer that announces a large body and sends nothing holds the first reservation only,
/// not its announced length; the body's bytes are reserved as they arrive.
#[tokio::test]
async fn an_announced_length_is_reserved_as_the_bytes_arrive() {
    let budget = UnverifiedBudget::new(1 << 20, Duration::from_secs(10));
    let body: Vec<u8> = (0..300 * 1024u32).map(|i| (i % 251) as u8).collect();
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, std::io::Error>>();
    let task = {
        let (budget, check) = (budget.clone(), check_for(&body));
        let declared = Some(body.len() as u64);
        tokio::spawn(async move {
            let limits = RequestLimits::default();
            read_verified(Body::from_stream(rx), declared, &limits, &budget, check).await
        })
    };
    settle(&budget, (1 << 20) - FIRST_RESERVATION).await;
    for piece in body.chunks(8192) {
        tx.unbounded_send(Ok(Bytes::copy_from_slice(piece)))
            .unwrap();
    }
    drop(tx);
    assert_eq!(task.await.unwrap().map(|b| b.len()), Ok(body.len()));
    assert_eq!(budget.available(), 1 << 20);
}

/// Past its first reservation, a body announced as large holds at most twice the bytes it
/// has sent, not its announced length.
#[tokio::test]
async fn a_large_announced_body_holds_room_in_step_with_what_it_sent() {
    let total = 32 << 20;
    let budget = UnverifiedBudget::new(total, Duration::from_secs(10));
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, std::io::Error>>();
    let task = {
        let budget = budget.clone();
        let check = check_for(b"never completed");
        tokio::spawn(async move {
            let limits = RequestLimits::default();
            read_verified(
                Body::from_stream(rx),
                Some(25 << 20),
                &limits,
                &budget,
                check,
            )
            .await
        })
    };
    settle(&budget, total - FIRST_RESERVATION).await;
    // 64 KiB + 1 byte sent: the next step is 128 KiB, not the announced 25 MiB.
    tx.unbounded_send(Ok(Bytes::from(vec![b'x'; FIRST_RESERVATION + 1])))
        .unwrap();
    settle(&budget, total - 2 * FIRST_RESERVATION).await;
    drop(tx);
    assert!(task.await.unwrap().is_err(), "a body cut short is refused");
    assert_eq!(budget.available(), total);
}
