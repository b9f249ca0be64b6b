//! The re-enactment's own tests.
#[test]
#[cfg(unix)] // modes; Windows' private folders are the bus's own test (an access list)
fn the_private_folder_and_copies_are_the_users_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = super::private_dir().unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(dir.path()), 0o700);
    let copy = dir.path().join("copy.jsonl");
    super::private_file(&copy).unwrap();
    assert_eq!(mode(&copy), 0o600);
    assert!(
        super::private_file(&copy).is_err(),
        "never an existing file"
    );
}

use super::*;

#[test]
fn a_reader_waiting_for_room_is_let_go_when_the_replay_stops() {
    let ahead = Ahead::default();
    assert!(ahead.take(AHEAD_BYTES), "an empty budget takes any line");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| tx.send(ahead.take(1)).unwrap());
        // The replay gives up (an error, say) without taking the line.
        drop(Close(&ahead));
        let let_go = rx.recv_timeout(std::time::Duration::from_secs(20));
        assert_eq!(let_go, Ok(false), "the reader stops instead of waiting");
    });
    // And room made by a replayed line lets the next one in.
    let ahead = Ahead::default();
    assert!(ahead.take(AHEAD_BYTES));
    ahead.done(AHEAD_BYTES);
    assert!(ahead.take(1));
}

#[test]
fn lines_held_in_a_batch_go_before_the_reader_waits_for_room() {
    // Small lines, then one that needs all the room: the batch read so
    // far must reach the replay first, or both sides wait for ever.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut text = String::new();
    for i in 0..10 {
        text.push_str(&format!("{{\"n\":{i}}}\n"));
    }
    text.push_str(&format!("{{\"big\":\"{}\"}}\n", "x".repeat(AHEAD_BYTES)));
    text.push_str("{\"n\":10}\n");
    std::fs::write(&path, &text).unwrap();
    let ahead = Ahead::default();
    let (tx, rx) = std::sync::mpsc::sync_channel(16);
    let mut lines = 0;
    std::thread::scope(|s| {
        let ahead = &ahead;
        let file = std::fs::File::open(&path).unwrap();
        s.spawn(move || read_ahead(file, Host::Claude, ahead, &tx));
        let _close = Close(ahead);
        loop {
            let batch = match rx.recv_timeout(std::time::Duration::from_secs(20)) {
                Ok(b) => b.unwrap(),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(e) => panic!("the reader is stuck: {e}"),
            };
            let mut held = 0;
            for read in batch {
                lines += 1;
                held += read.line.map_or(0, |(b, _)| b.len());
            }
            ahead.done(held);
        }
    });
    assert_eq!(lines, 12);
}
