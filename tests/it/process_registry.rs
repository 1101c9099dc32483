//! `kill_all_groups` kills every child group in the process, so it gets a test binary
//! of its own: nothing else runs children here.

use std::time::Duration;

use debussy::process::{
    ExitStatus, ProcessCommand, ProcessEvent, Signal, Stream, kill_all_groups, live_groups,
};

const BOUND: Duration = Duration::from_secs(10);

async fn ready(child: &mut debussy::process::Child) {
    let wait = async {
        while let Some(event) = child.next_event().await {
            if let ProcessEvent::Line {
                stream: Stream::Stdout,
                ..
            } = event
            {
                return;
            }
        }
        panic!("exited before its ready line");
    };
    tokio::time::timeout(BOUND, wait)
        .await
        .expect("ready line in time");
}

#[tokio::test]
async fn kill_all_groups_kills_every_live_child() {
    let command = ProcessCommand::new("sh")
        .arg("-c")
        .arg("trap '' INT TERM; echo ready; while :; do sleep 10; done");
    let mut first = command.spawn().expect("spawn");
    let mut second = command.spawn().expect("spawn");
    ready(&mut first).await;
    ready(&mut second).await;
    let live = live_groups();
    assert!(
        live.contains(&first.pid()) && live.contains(&second.pid()),
        "{live:?}"
    );

    assert_eq!(kill_all_groups(), 2);

    let sigkill = ExitStatus::Signal(Signal::SIGKILL as i32);
    for child in [&first, &second] {
        let report = tokio::time::timeout(BOUND, child.wait())
            .await
            .expect("reaped in time");
        assert_eq!(report.status, sigkill);
    }
    // The supervising tasks unregister the groups once they are cleaned up.
    tokio::time::timeout(BOUND, async {
        while !live_groups().is_empty() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("groups unregistered");
}
