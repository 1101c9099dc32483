//! The scripted model server holding and stalling turns until released, its waits
//! timing out, and the CLI locator's words for a missing binary.

use std::path::Path;
use std::time::Duration;

use crate::support::model_server::{ModelServer, Scenario, Turn};
use crate::support::{claude, cli};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::model_server::{WAIT, main_body, request_bytes, send};

/// Reads from `stream` until `needle` has arrived, or panics after [`WAIT`].
async fn read_until(stream: &mut TcpStream, buffer: &mut String, needle: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut chunk = [0_u8; 4096];
    while !buffer.contains(needle) {
        let read = tokio::time::timeout_at(deadline, stream.read(&mut chunk))
            .await
            .unwrap_or_else(|_| panic!("{needle:?} did not arrive; got so far:\n{buffer}"))
            .expect("read");
        assert!(
            read > 0,
            "connection closed before {needle:?}; got:\n{buffer}"
        );
        buffer.push_str(&String::from_utf8_lossy(&chunk[..read]));
    }
}

/// A connection to `server` on which one main-thread Messages request has been sent.
async fn post_go(server: &ModelServer) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
    stream
        .write_all(&request_bytes(
            "POST",
            "/v1/messages",
            Some(&main_body("go")),
        ))
        .await
        .expect("write");
    stream
}

#[tokio::test]
async fn a_held_turn_streams_its_blocks_and_waits_for_release() {
    let server = ModelServer::start(Scenario::new().turn(Turn::reply("partial").hold()))
        .expect("start server");
    let mut stream = post_go(&server).await;
    let mut buffer = String::new();
    read_until(&mut stream, &mut buffer, "event: content_block_stop").await;
    // Held: nothing more comes until released. This bounded read is the only way to
    // observe an absence.
    let mut chunk = [0_u8; 1024];
    let more = tokio::time::timeout(Duration::from_millis(300), stream.read(&mut chunk)).await;
    assert!(more.is_err(), "the held stream went on: {buffer}");
    assert!(!buffer.contains("message_delta"));
    server.release();
    read_until(&mut stream, &mut buffer, "event: message_stop").await;
}

#[tokio::test]
async fn a_stalled_turn_sends_nothing_until_released() {
    let server = ModelServer::start(
        Scenario::new()
            .turn(Turn::reply("late").stall())
            .turn(Turn::reply("held later").stall()),
    )
    .expect("start server");
    let mut stream = post_go(&server).await;
    // The request is recorded on arrival, before any answer.
    let seen = server
        .wait_for_main_requests_async(1, WAIT)
        .await
        .expect("request recorded");
    assert_eq!(seen.len(), 1);
    let mut chunk = [0_u8; 1024];
    let early = tokio::time::timeout(Duration::from_millis(300), stream.read(&mut chunk)).await;
    assert!(early.is_err(), "a stalled turn sent something");
    server.release();
    let mut buffer = String::new();
    read_until(&mut stream, &mut buffer, "event: message_stop").await;
    assert!(buffer.starts_with("HTTP/1.1 200"));

    // A release before a request arrives does not pre-release it.
    let mut second = post_go(&server).await;
    server
        .wait_for_main_requests_async(2, WAIT)
        .await
        .expect("second request recorded");
    let early = tokio::time::timeout(Duration::from_millis(300), second.read(&mut chunk)).await;
    assert!(
        early.is_err(),
        "the second stalled turn was released by the earlier release"
    );
    // Dropping the server closes the held connection.
    drop(server);
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(WAIT, second.read_to_end(&mut rest)).await;
    assert!(
        closed.is_ok(),
        "dropping the server did not close a stalled connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_time_out_with_what_arrived() {
    let server =
        ModelServer::start(Scenario::new().turn(Turn::reply("one"))).expect("start server");
    send(&server, "POST", "/v1/messages", Some(&main_body("go"))).await;

    let error = server
        .wait_for_main_requests_async(2, Duration::from_millis(100))
        .await
        .expect_err("only one main request arrived");
    let message = error.to_string();
    assert!(
        message.contains("waiting for 2 main request(s)"),
        "{message}"
    );
    assert!(
        message.contains("#0 main turn 0 POST /v1/messages"),
        "{message}"
    );

    let blocking = tokio::task::block_in_place(|| {
        server.wait_for_main_requests(2, Duration::from_millis(100))
    });
    assert!(blocking.is_err());
    let ready = tokio::task::block_in_place(|| {
        server.wait_for_main_requests(1, Duration::from_millis(100))
    });
    assert_eq!(ready.expect("one request is there").len(), 1);
}

#[test]
fn the_cli_locator_explains_a_missing_binary() {
    let manifest = Path::new("/project");
    assert_eq!(
        cli::candidate(&claude::PINNED, None, manifest),
        Path::new("/project/.tools/npm/node_modules/.bin/claude")
    );
    assert_eq!(
        cli::candidate(&claude::PINNED, Some("".into()), manifest),
        Path::new("/project/.tools/npm/node_modules/.bin/claude")
    );
    assert_eq!(
        cli::candidate(&claude::PINNED, Some("/opt/claude".into()), manifest),
        Path::new("/opt/claude")
    );
    let error =
        cli::probe(&claude::PINNED, Path::new("/nonexistent/claude")).expect_err("no such binary");
    assert!(error.contains("/nonexistent/claude"), "{error}");
    assert!(error.contains("scripts/test-tools"), "{error}");
    assert!(error.contains(claude::CLAUDE_OVERRIDE_ENV), "{error}");
}
