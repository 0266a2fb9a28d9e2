//! A capped output buffer that keeps the head and the tail of a stream.
//!
//! Bash output can be gigabytes (`seq 1 100000000`, a chatty build); the
//! model only needs the start (what ran) and the end (how it ended), as in
//! Claude Code's Bash tool, whose results are cut in the middle. Memory stays
//! bounded while streaming: the head stops growing after `head_chars`
//! characters and the tail is a ring of at most `4 * tail_chars` bytes (the
//! longest UTF-8 encoding of that many characters). Cuts fall on UTF-8
//! character boundaries; bytes that are not UTF-8 are shown as U+FFFD.

use std::collections::VecDeque;

/// Head-and-tail buffer. Feed it with [`OutputCap::push`], read it with
/// [`OutputCap::finish`].
#[derive(Debug, Clone)]
pub struct OutputCap {
    head: Vec<u8>,
    head_chars_seen: usize,
    head_full: bool,
    tail: VecDeque<u8>,
    /// The byte just before the ring's first byte (last one pushed out of
    /// the ring, or the head's last byte), to know whether the tail starts
    /// a line.
    before_tail: Option<u8>,
    head_chars: usize,
    tail_chars: usize,
    total_bytes: u64,
}

/// What [`OutputCap::finish`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CappedText {
    /// The first at most `head_chars` characters.
    pub head: String,
    /// The last at most `tail_chars` characters; empty when nothing was
    /// omitted and everything fit in `head`.
    pub tail: String,
    /// Bytes of the stream shown in neither part (0 when nothing was cut).
    pub omitted_bytes: u64,
    /// Bytes the stream had in all.
    pub total_bytes: u64,
    /// `true` when the tail begins at the start of a line (the byte before
    /// it was `\n`, or there is no byte before it).
    pub tail_starts_line: bool,
}

impl CappedText {
    /// `true` when no byte of the stream was dropped.
    pub fn is_complete(&self) -> bool {
        self.omitted_bytes == 0
    }

    /// When text was omitted, moves both cuts to line boundaries if one is
    /// near: the head ends after its last `\n` and a tail that starts
    /// mid-line starts after its first `\n` instead, provided that drops at most `max_shift` bytes on each
    /// side (a huge single line is still cut mid-line). The dropped bytes
    /// are added to `omitted_bytes`. A complete text is returned unchanged.
    pub fn align_to_lines(mut self, max_shift: usize) -> Self {
        if self.is_complete() {
            return self;
        }
        if let Some(nl) = self.head.rfind('\n') {
            let dropped = self.head.len() - (nl + 1);
            if dropped <= max_shift {
                self.head.truncate(nl + 1);
                self.omitted_bytes += dropped as u64;
            }
        }
        if self.tail_starts_line {
            return self;
        }
        if let Some(nl) = self.tail.find('\n') {
            if nl < max_shift && nl + 1 < self.tail.len() {
                self.tail.drain(..=nl);
                self.omitted_bytes += (nl + 1) as u64;
                self.tail_starts_line = true;
            }
        }
        self
    }
}

/// `true` for a byte that starts a UTF-8 character (or is a stray byte that
/// decodes to one U+FFFD): anything but a continuation byte `10xxxxxx`.
fn starts_char(b: u8) -> bool {
    b & 0xC0 != 0x80
}

impl OutputCap {
    /// A buffer that shows at most `head_chars` characters from the start and
    /// `tail_chars` characters from the end.
    pub fn new(head_chars: usize, tail_chars: usize) -> Self {
        Self {
            head: Vec::new(),
            head_chars_seen: 0,
            head_full: head_chars == 0,
            tail: VecDeque::new(),
            before_tail: None,
            head_chars,
            tail_chars,
            total_bytes: 0,
        }
    }

    /// Bytes pushed so far.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Appends a chunk of raw output (any bytes, any split point — a chunk
    /// may end in the middle of a character).
    pub fn push(&mut self, mut chunk: &[u8]) {
        self.total_bytes += chunk.len() as u64;
        if !self.head_full {
            let mut taken = 0;
            for &b in chunk {
                if starts_char(b) {
                    if self.head_chars_seen == self.head_chars {
                        self.head_full = true;
                        break;
                    }
                    self.head_chars_seen += 1;
                }
                taken += 1;
            }
            self.head.extend_from_slice(&chunk[..taken]);
            chunk = &chunk[taken..];
            self.before_tail = self.head.last().copied();
        }
        if chunk.is_empty() {
            return;
        }
        let max_tail = self.tail_chars.saturating_mul(4);
        if chunk.len() >= max_tail {
            let cut = chunk.len() - max_tail;
            if cut > 0 {
                self.before_tail = Some(chunk[cut - 1]);
            } else if let Some(&last) = self.tail.back() {
                self.before_tail = Some(last);
            }
            self.tail.clear();
            self.tail.extend(&chunk[cut..]);
        } else {
            let overflow = (self.tail.len() + chunk.len()).saturating_sub(max_tail);
            if overflow > 0 {
                self.before_tail = self.tail.get(overflow - 1).copied();
            }
            self.tail.drain(..overflow);
            self.tail.extend(chunk);
        }
    }

    /// The head, the tail (cut to `tail_chars` characters on a character
    /// boundary) and the omitted byte count. Does not consume the buffer, so
    /// it can also render partial output while the command still runs.
    pub fn finish(&self) -> CappedText {
        let shown_head = self.head.len() as u64;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        // Keep the last `tail_chars` characters: walk back over char starts.
        let mut start = tail.len();
        let mut chars = 0;
        while start > 0 && chars < self.tail_chars {
            start -= 1;
            if starts_char(tail[start]) {
                chars += 1;
            }
        }
        // A ring trimmed mid-character starts with continuation bytes; skip them.
        while start < tail.len() && !starts_char(tail[start]) {
            start += 1;
        }
        let kept = &tail[start..];
        let before = if start > 0 {
            Some(tail[start - 1])
        } else {
            self.before_tail
        };
        let tail_starts_line = before.is_none_or(|b| b == b'\n');
        let omitted = self.total_bytes - shown_head - kept.len() as u64;
        if omitted == 0 {
            // Nothing dropped: decode head and tail as one stream so a
            // character split across the two parts stays whole.
            let mut all = self.head.clone();
            all.extend_from_slice(kept);
            return CappedText {
                head: String::from_utf8_lossy(&all).into_owned(),
                tail: String::new(),
                omitted_bytes: 0,
                total_bytes: self.total_bytes,
                tail_starts_line: true,
            };
        }
        CappedText {
            head: String::from_utf8_lossy(&self.head).into_owned(),
            tail: String::from_utf8_lossy(kept).into_owned(),
            omitted_bytes: omitted,
            total_bytes: self.total_bytes,
            tail_starts_line,
        }
    }

    /// Bytes held in memory (head plus tail ring), for the bounded-memory test.
    pub fn held_bytes(&self) -> usize {
        self.head.len() + self.tail.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_whole() {
        let mut cap = OutputCap::new(10, 10);
        cap.push(b"hello\n");
        cap.push(b"world\n");
        let t = cap.finish();
        assert_eq!(t.head, "hello\nworld\n");
        assert_eq!(t.tail, "");
        assert!(t.is_complete());
        assert_eq!(t.total_bytes, 12);
    }

    #[test]
    fn output_just_over_head_is_still_whole() {
        let mut cap = OutputCap::new(3, 3);
        cap.push(b"abcdef");
        let t = cap.finish();
        assert_eq!(t.head, "abcdef");
        assert!(t.is_complete());
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let mut cap = OutputCap::new(4, 4);
        for chunk in [&b"0123"[..], b"45", b"6789ab", b"cdef"] {
            cap.push(chunk);
        }
        let t = cap.finish();
        assert_eq!(t.head, "0123");
        assert_eq!(t.tail, "cdef");
        assert_eq!(t.omitted_bytes, 8);
        assert_eq!(t.total_bytes, 16);
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        // "é" is 2 bytes, "€" is 3: push byte by byte to split every char.
        let text = "ééé€€€xyz€€€ééé";
        let mut cap = OutputCap::new(4, 4);
        for b in text.as_bytes() {
            cap.push(std::slice::from_ref(b));
        }
        let t = cap.finish();
        assert_eq!(t.head, "ééé€");
        assert_eq!(t.tail, "€ééé");
        assert!(!t.head.contains('\u{FFFD}') && !t.tail.contains('\u{FFFD}'));
        let shown = t.head.len() + t.tail.len();
        assert_eq!(t.omitted_bytes as usize, text.len() - shown);
    }

    #[test]
    fn tail_of_multibyte_text_whole_characters() {
        // 3 tail chars → ring of 12 bytes for 15 bytes of "€".
        let mut cap = OutputCap::new(1, 3);
        cap.push(b"a");
        cap.push("€€€€€".as_bytes());
        let t = cap.finish();
        assert_eq!(t.head, "a");
        assert_eq!(t.tail, "€€€");
        assert_eq!(t.omitted_bytes, 6);
    }

    #[test]
    fn ring_starting_mid_character_drops_the_fragment() {
        // 2 tail chars → ring of 8 bytes; the last 8 bytes of
        // "😀😀" + "\xF0" are 3 continuation bytes, one 😀 and a stray lead.
        let mut cap = OutputCap::new(1, 2);
        cap.push(b"a");
        cap.push("😀😀".as_bytes());
        cap.push(b"\xF0");
        let t = cap.finish();
        assert_eq!(t.tail, "😀\u{FFFD}");
        assert_eq!(t.omitted_bytes, 4);
    }

    #[test]
    fn memory_stays_bounded() {
        let mut cap = OutputCap::new(100, 100);
        let line = b"0123456789abcdef\n";
        for _ in 0..100_000 {
            cap.push(line);
        }
        assert!(cap.held_bytes() <= 100 + 400, "held {}", cap.held_bytes());
        assert_eq!(cap.total_bytes(), 1_700_000);
        let t = cap.finish();
        assert_eq!(t.head.chars().count(), 100);
        assert_eq!(t.tail.chars().count(), 100);
        assert!(t.tail.ends_with("abcdef\n"));
    }

    #[test]
    fn cuts_move_to_nearby_line_ends() {
        let mut cap = OutputCap::new(8, 8);
        cap.push(b"one\ntwo\nthree\nfour\nfive\nsix\n");
        let t = cap.finish();
        assert_eq!(
            (t.head.as_str(), t.tail.as_str()),
            ("one\ntwo\n", "ive\nsix\n")
        );
        assert_eq!(t.omitted_bytes, 12);
        let t = t.align_to_lines(4);
        assert_eq!((t.head.as_str(), t.tail.as_str()), ("one\ntwo\n", "six\n"));
        assert_eq!(t.omitted_bytes, 16);
        // A line longer than the shift limit stays cut mid-line.
        let mut cap = OutputCap::new(4, 4);
        cap.push(b"abcdefghijklmnop\nq");
        let t = cap.finish().align_to_lines(1);
        assert_eq!((t.head.as_str(), t.tail.as_str()), ("abcd", "op\nq"));
    }

    #[test]
    fn invalid_utf8_becomes_replacement_not_panic() {
        let mut cap = OutputCap::new(10, 10);
        cap.push(b"ok \xE9 done");
        assert_eq!(cap.finish().head, "ok \u{FFFD} done");
    }
}
