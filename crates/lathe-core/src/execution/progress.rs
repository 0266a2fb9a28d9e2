//! Per-call progress: a tool's raw output chunks become `ToolProgress`
//! events with whole UTF-8 text (a character split between two chunks is
//! held back until it is complete).

use std::sync::{Arc, Mutex};

use crate::events::{AgentEvent, EventSink};
use crate::tools::ProgressFn;

/// A [`ProgressFn`] that emits `ToolProgress { id, text }` on `sink`.
pub fn progress_for(id: &str, sink: Arc<dyn EventSink>) -> ProgressFn {
    let id = id.to_string();
    let pending = Mutex::new(Vec::<u8>::new());
    Arc::new(move |chunk: &[u8]| {
        let mut buf = pending.lock().unwrap_or_else(|e| e.into_inner());
        buf.extend_from_slice(chunk);
        let text = take_text(&mut buf);
        drop(buf);
        if !text.is_empty() {
            sink.emit(AgentEvent::ToolProgress {
                id: id.clone(),
                text,
            });
        }
    })
}

/// Removes and returns the decodable prefix of `buf`: invalid bytes become
/// U+FFFD, an incomplete character at the end stays in `buf`.
fn take_text(buf: &mut Vec<u8>) -> String {
    let mut out = String::new();
    let mut rest: &[u8] = buf;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                rest = &[];
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                match e.error_len() {
                    Some(n) => {
                        out.push('\u{FFFD}');
                        rest = &bad[n..];
                    }
                    None => {
                        rest = bad;
                        break;
                    }
                }
            }
        }
    }
    let keep = rest.to_vec();
    *buf = keep;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::RecordingSink;

    #[test]
    fn characters_split_between_chunks_arrive_whole() {
        let sink = Arc::new(RecordingSink::default());
        let p = progress_for("toolu_1", sink.clone());
        let bytes = "café ☕\n".as_bytes();
        for b in bytes {
            p(std::slice::from_ref(b));
        }
        let text: String = sink
            .events()
            .into_iter()
            .map(|e| match e {
                AgentEvent::ToolProgress { id, text } => {
                    assert_eq!(id, "toolu_1");
                    text
                }
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(text, "café ☕\n");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut buf = b"a\xffb".to_vec();
        assert_eq!(take_text(&mut buf), "a\u{FFFD}b");
        assert!(buf.is_empty());
    }
}
