//! Reading a file line by line with a bound on each line, so that a file with no newline
//! in gigabytes (`/dev/zero` copied to disk, a binary renamed `.jsonl`) is read in bounded
//! memory: a line past the bound is skipped to its end, and said to be.

use std::io::{self, BufRead};

/// What [`read_line_limited`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRead {
    /// A line is in the buffer, with its newline when it had one (the last line of a
    /// file may not).
    Line,
    /// A line longer than the limit was read to its end and dropped; the buffer is empty.
    TooLong {
        /// Its length in bytes, newline included.
        len: u64,
    },
    /// The end of the input: nothing more was read.
    End,
}

/// Read the next line of `reader` into `buf` (emptied first), keeping at most `limit`
/// bytes of it besides its newline. A longer line is consumed to its end (or to the end
/// of the input) without being kept. Memory stays within `limit` plus the reader's buffer
/// whatever the input.
///
/// # Errors
/// What reading `reader` returns.
pub fn read_line_limited(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    limit: usize,
) -> io::Result<LineRead> {
    buf.clear();
    let mut len: u64 = 0;
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(match (len, too_long) {
                (0, _) => LineRead::End,
                (len, true) => LineRead::TooLong { len },
                (_, false) => LineRead::Line,
            });
        }
        let (take, ended) = match available.iter().position(|&b| b == b'\n') {
            Some(newline) => (newline + 1, true),
            None => (available.len(), false),
        };
        len += take as u64;
        if !too_long {
            let content = buf.len() + take - usize::from(ended);
            if content > limit {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&available[..take]);
            }
        }
        reader.consume(take);
        if ended {
            return Ok(if too_long {
                LineRead::TooLong { len }
            } else {
                LineRead::Line
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], limit: usize) -> Vec<(LineRead, Vec<u8>)> {
        let mut reader = io::BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let read = read_line_limited(&mut reader, &mut buf, limit).expect("read");
            if read == LineRead::End {
                return out;
            }
            out.push((read, buf.clone()));
        }
    }

    #[test]
    fn lines_within_the_limit_are_kept_with_their_newline() {
        assert_eq!(
            lines(b"one\ntwo\nlast", 5),
            [
                (LineRead::Line, b"one\n".to_vec()),
                (LineRead::Line, b"two\n".to_vec()),
                (LineRead::Line, b"last".to_vec()),
            ]
        );
        assert_eq!(
            lines(b"12345\n", 5),
            [(LineRead::Line, b"12345\n".to_vec())]
        );
    }

    #[test]
    fn a_longer_line_is_skipped_whole_and_the_next_one_kept() {
        assert_eq!(
            lines(b"123456\nok\n1234567", 5),
            [
                (LineRead::TooLong { len: 7 }, Vec::new()),
                (LineRead::Line, b"ok\n".to_vec()),
                (LineRead::TooLong { len: 7 }, Vec::new()),
            ]
        );
    }

    #[test]
    fn endless_input_without_a_newline_stays_within_the_limit() {
        let mut reader = io::BufReader::new(io::repeat(0).take(64 * 1024 * 1024));
        let mut buf = Vec::new();
        let read = read_line_limited(&mut reader, &mut buf, 1024).expect("read");
        assert_eq!(
            read,
            LineRead::TooLong {
                len: 64 * 1024 * 1024
            }
        );
        assert!(buf.capacity() <= 64 * 1024, "{}", buf.capacity());
    }

    use std::io::Read as _;
}
