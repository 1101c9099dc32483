//! The HTTP side: every request is recorded, then answered from the scenario's turns, the refusals and the pauses.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Response, StatusCode, Uri, header};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use super::record::Recorder;
use super::route::Router;
use super::route::{Answer, Wire};
use super::{Pause, RecordedRequest, RequestKind, gemini, responses, sse};

/// State shared by the handler and the [`ModelServer`] handle.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) router: Mutex<Router>,
    pub(super) recorder: Recorder,
    pub(super) release: watch::Sender<u64>,
    pub(super) shutdown: CancellationToken,
}

/// Waits until [`ModelServer::release`] moves past `seen`, or the server shuts down.
pub(super) async fn released(shared: &Shared, seen: u64) {
    let mut generation = shared.release.subscribe();
    tokio::select! {
        _ = generation.wait_for(|current| *current > seen) => {}
        () = shared.shutdown.cancelled() => {}
    }
}

/// The model in a Gemini API path: `/v1beta/models/MODEL:streamGenerateContent`.
fn gemini_model(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/v1beta/models/")?;
    Some(rest.split(':').next().unwrap_or(rest).to_owned())
}

fn lowercase_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn parse_body(body: &Bytes) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

fn response(
    status: u16,
    content_type: Option<&str>,
    request_id: &str,
    body: Body,
) -> Response<Body> {
    let mut builder = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("request-id", request_id);
    if let Some(content_type) = content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    builder.body(body).unwrap_or_else(|error| {
        let mut fallback =
            Response::new(Body::from(format!("model server: bad response: {error}")));
        *fallback.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        fallback
    })
}

pub(super) async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let mut request = RecordedRequest {
        index: 0,
        elapsed: shared.recorder.elapsed(),
        method: method.as_str().to_owned(),
        path: uri.path().to_owned(),
        query: uri.query().map(str::to_owned),
        headers: lowercase_headers(&headers),
        body: parse_body(&body),
        kind: RequestKind::Unknown,
        scripted: false,
    };
    let release_seen = *shared.release.borrow();
    let refused = shared
        .router
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .refusing(&request, request.elapsed);
    if let Some((wire, refusing, left)) = refused {
        let model = request
            .model()
            .map(str::to_owned)
            .or_else(|| gemini_model(&request.path))
            .unwrap_or_else(|| "claude-scripted".to_owned());
        request.kind = RequestKind::Refused;
        request.scripted = true;
        let index = shared.recorder.push(request);
        let refusal = refusing.answer(wire, &model, left);
        let mut reply = response(
            refusal.status,
            Some("application/json"),
            &format!("req_scripted_{index:04}"),
            Body::from(refusal.body.to_string()),
        );
        for (name, value) in refusal.headers {
            if let Ok(value) = header::HeaderValue::from_str(&value) {
                reply.headers_mut().insert(name, value);
            }
        }
        return reply;
    }
    let decision = shared
        .router
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .route(&request);
    request.kind = decision.kind;
    request.scripted = decision.scripted;
    let model = request.model().unwrap_or("claude-scripted").to_owned();
    let summary = request.summary();
    let index = shared.recorder.push(request);
    if !decision.scripted {
        eprintln!("model server: answered with a fallback: {summary}");
    }
    let request_id = format!("req_scripted_{index:04}");
    let message_id = format!("msg_scripted_{index:04}");

    match decision.answer {
        Answer::Empty => response(200, None, &request_id, Body::empty()),
        Answer::Json { status, body } => response(
            status,
            Some("application/json"),
            &request_id,
            Body::from(body.to_string()),
        ),
        Answer::Turn {
            turn,
            streaming,
            wire,
        } => {
            if !turn.delay.is_zero() {
                tokio::time::sleep(turn.delay).await;
            }
            if turn.pause == Pause::Stall {
                released(&shared, release_seen).await;
            }
            if let Some(error) = &turn.error {
                let mut reply = response(
                    error.status,
                    Some("application/json"),
                    &request_id,
                    Body::from(
                        match wire {
                            Wire::Messages => sse::error_body(error),
                            Wire::Responses => responses::error_body(error),
                            Wire::Gemini => gemini::error_body(error.status, error),
                        }
                        .to_string(),
                    ),
                );
                // Ask the SDK not to retry; Claude Code may still retry on its own,
                // which is why error turns are sticky.
                reply
                    .headers_mut()
                    .insert("x-should-retry", header::HeaderValue::from_static("false"));
                return reply;
            }
            if !streaming {
                let message = match wire {
                    Wire::Gemini => gemini::response(&turn, &model),
                    Wire::Messages | Wire::Responses => sse::message(&turn, &model, &message_id),
                };
                return response(
                    200,
                    Some("application/json"),
                    &request_id,
                    Body::from(message.to_string()),
                );
            }
            let encoded = match wire {
                Wire::Messages => sse::stream(&turn, &model, &message_id),
                Wire::Responses => {
                    responses::stream(&turn, &model, &format!("resp_scripted_{index:04}"))
                }
                Wire::Gemini => gemini::stream(&turn, &model),
            };
            let (sender, receiver) = mpsc::channel::<Result<String, Infallible>>(16);
            let hold = turn.pause == Pause::Hold;
            let writer_shared = Arc::clone(&shared);
            tokio::spawn(async move {
                for chunk in encoded.head {
                    if sender.send(Ok(chunk)).await.is_err() {
                        return;
                    }
                }
                if hold {
                    released(&writer_shared, release_seen).await;
                }
                for chunk in encoded.tail {
                    if sender.send(Ok(chunk)).await.is_err() {
                        return;
                    }
                }
            });
            response(
                200,
                Some("text/event-stream"),
                &request_id,
                Body::from_stream(ReceiverStream::new(receiver)),
            )
        }
    }
}
