//! `DiskEditor`: the [`Editor`](super::Editor) for files on disk.
//!
//! Reads decode bytes with [`codec::decode`](super::codec::decode); writes
//! re-check the reader's [`Stamp`] and replace the file atomically: a temp
//! file in the target's directory, `fsync`, then `rename` over the target.
//! Symlinks are followed to the real file (the link stays a link), the
//! target's permission bits are kept, and parent directories of a new file are
//! created. All blocking file-system work runs on tokio's blocking pool.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::codec;
use super::{
    changed_line_span, Document, Editor, EditorError, TextHash, Version, WriteOutcome,
    WriteRequest, MAX_FILE_BYTES,
};

/// Most symlinks followed before a path counts as a loop (Linux's `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;

/// The disk-only [`Editor`]: every document is a file.
#[derive(Debug, Default, Clone)]
pub struct DiskEditor;

impl DiskEditor {
    /// A disk editor.
    pub fn new() -> Self {
        Self
    }
}

#[async_trait]
impl Editor for DiskEditor {
    async fn read(&self, path: &Path) -> Result<Document, EditorError> {
        let path = path.to_path_buf();
        run_blocking(path.clone(), move || read_blocking(&path)).await
    }

    async fn write(&self, path: &Path, req: WriteRequest) -> Result<WriteOutcome, EditorError> {
        let path = path.to_path_buf();
        run_blocking(path.clone(), move || write_blocking(&path, req)).await
    }
}

async fn run_blocking<T: Send + 'static>(
    path: PathBuf,
    f: impl FnOnce() -> Result<T, EditorError> + Send + 'static,
) -> Result<T, EditorError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(EditorError::Io {
            path,
            detail: format!("disk task failed: {e}"),
        })
    })
}

/// Follows symlinks of the final component of `path` (relative link targets
/// resolve against the link's directory) until a non-link or a missing file.
/// A missing final target is returned as is, so writing through a dangling
/// link creates its target, as the shell's `>` does.
///
/// Errors: [`EditorError::BadPath`] after [`MAX_SYMLINK_HOPS`] links (a loop)
/// or when an intermediate component cannot be resolved (e.g. `ELOOP`).
pub(crate) fn real_target(path: &Path) -> Result<PathBuf, EditorError> {
    let bad = |detail: String| EditorError::BadPath {
        path: path.to_path_buf(),
        detail,
    };
    let mut current = path.to_path_buf();
    for _ in 0..MAX_SYMLINK_HOPS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current).map_err(|e| bad(e.to_string()))?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(bad(e.to_string())),
        }
    }
    Err(bad(format!(
        "symlink loop (more than {MAX_SYMLINK_HOPS} links deep)"
    )))
}

fn io_error(path: &Path, e: &io::Error) -> EditorError {
    match e.kind() {
        io::ErrorKind::NotFound => EditorError::NotFound(path.to_path_buf()),
        io::ErrorKind::IsADirectory => EditorError::IsDirectory(path.to_path_buf()),
        _ => EditorError::Io {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
    }
}

/// The file's bytes, or `None` when there is no file; directories and other
/// errors are errors.
///
/// Only regular files of at most [`MAX_FILE_BYTES`] are read: a FIFO, a
/// device or a socket is [`EditorError::NotAFile`] before it is opened (a
/// FIFO's `open` blocks until a writer comes, `/dev/zero` never ends), and a
/// larger file is [`EditorError::TooLarge`] from its metadata. The file is
/// opened with `O_NONBLOCK` and checked again on the handle, so a path
/// swapped for a FIFO between the two checks cannot block either, and read
/// no further than the limit.
fn read_bytes(path: &Path, real: &Path) -> Result<Option<(Vec<u8>, fs::Metadata)>, EditorError> {
    let meta = match fs::metadata(real) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, &e)),
    };
    check_regular(path, &meta)?;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(real)
        .map_err(|e| io_error(path, &e))?;
    let meta = file.metadata().map_err(|e| io_error(path, &e))?;
    check_regular(path, &meta)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, &e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(EditorError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            max: MAX_FILE_BYTES,
        });
    }
    Ok(Some((bytes, meta)))
}

/// `Ok` for a regular file of at most [`MAX_FILE_BYTES`]; else the error
/// [`read_bytes`] returns for it.
fn check_regular(path: &Path, meta: &fs::Metadata) -> Result<(), EditorError> {
    let t = meta.file_type();
    if t.is_dir() {
        return Err(EditorError::IsDirectory(path.to_path_buf()));
    }
    if !t.is_file() {
        let kind = if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(EditorError::NotAFile {
            path: path.to_path_buf(),
            kind: kind.to_string(),
        });
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(EditorError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
            max: MAX_FILE_BYTES,
        });
    }
    Ok(())
}

fn version_of(meta: &fs::Metadata) -> Version {
    Version::Disk {
        mtime: meta.modified().ok(),
        len: meta.len(),
    }
}

fn decode_doc(path: &Path, bytes: &[u8], meta: &fs::Metadata) -> Result<Document, EditorError> {
    let (text, format) = codec::decode(bytes).map_err(|e| EditorError::NotText {
        path: path.to_path_buf(),
        kind: e.kind,
        size: meta.len(),
    })?;
    Ok(Document {
        path: path.to_path_buf(),
        text,
        version: version_of(meta),
        format,
        modified: false,
    })
}

fn read_blocking(path: &Path) -> Result<Document, EditorError> {
    let real = real_target(path)?;
    let (bytes, meta) =
        read_bytes(path, &real)?.ok_or_else(|| EditorError::NotFound(path.to_path_buf()))?;
    decode_doc(path, &bytes, &meta)
}

fn write_blocking(path: &Path, req: WriteRequest) -> Result<WriteOutcome, EditorError> {
    let real = real_target(path)?;
    let existing = read_bytes(path, &real)?;
    let (old_text, format, permissions) = match (&existing, &req.base) {
        (Some(_), None) => return Err(EditorError::AlreadyExists(path.to_path_buf())),
        (None, Some(_)) => return Err(EditorError::Stale(path.to_path_buf())),
        (None, None) => (String::new(), req.format, None),
        (Some((bytes, meta)), Some(base)) => {
            let doc = decode_doc(path, bytes, meta)?;
            // The stale rule (`Stamp::is_stale`): for a file on disk the
            // text decides, `mtime` being too coarse to trust.
            if base.is_stale(&doc.version, || TextHash::of(&doc.text)) {
                return Err(EditorError::Stale(path.to_path_buf()));
            }
            (doc.text, doc.format, Some(meta.permissions()))
        }
    };
    let bytes = codec::encode(&req.text, &format).map_err(|e| EditorError::Unencodable {
        encoding: e.encoding.to_string(),
        detail: e.detail,
    })?;
    replace_atomically(path, &real, &bytes, permissions, true, true)
        .map_err(|e| io_error(path, &e))?;
    let meta = fs::metadata(&real).map_err(|e| io_error(path, &e))?;
    let new_doc = decode_doc(path, &bytes, &meta)?;
    Ok(WriteOutcome {
        changed_lines: changed_line_span(&old_text, &new_doc.text),
        stamp: new_doc.stamp(),
        in_buffer: false,
        saved: true,
        exact: *new_doc.text == *req.text,
    })
}

/// Writes `bytes` to a temp file beside `real`, syncs it, gives it
/// `permissions` (the old file's; a new file gets `0o666` minus the umask,
/// like any created file), and renames it over `real`. Creates missing parent
/// directories. A failure leaves `real` untouched and removes the temp file.
fn replace_atomically(
    path: &Path,
    real: &Path,
    bytes: &[u8],
    permissions: Option<fs::Permissions>,
    sync: bool,
    sync_dir: bool,
) -> io::Result<()> {
    let dir = real
        .parent()
        .ok_or_else(|| io::Error::other(format!("{} has no parent directory", path.display())))?;
    fs::create_dir_all(dir)?;
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".lathe-tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if let Some(perms) = permissions {
        tmp.as_file().set_permissions(perms)?;
    }
    if sync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(real).map_err(|e| e.error)?;
    // Make the rename itself durable; not every platform can open a directory.
    if sync_dir {
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Replaces the existing file at `path` (symlinks followed, as
/// `real_target`) with `bytes` the way every lathe write does: a temp
/// file beside it with the old file's permission bits, `fsync` of the file
/// when `sync` (`'fsync'`: as Neovim's `:write`, which does not sync the
/// directory), renamed over it. Returns the new file's metadata. For the
/// direct write of a loaded buffer (`lathe::adapters::direct_write`), which has
/// already encoded the buffer's text (`codec::encode`).
///
/// Errors: the I/O error (the old file is then untouched); a missing file is
/// `NotFound` (this never creates one).
pub fn replace_existing(path: &Path, bytes: &[u8], sync: bool) -> io::Result<fs::Metadata> {
    let real = real_target(path).map_err(|e| io::Error::other(e.to_string()))?;
    let old = fs::metadata(&real)?;
    replace_atomically(path, &real, bytes, Some(old.permissions()), sync, false)?;
    fs::metadata(&real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::{LineEnding, Stamp, TextFormat};

    fn req(base: Option<Stamp>, text: &str) -> WriteRequest {
        WriteRequest {
            base,
            text: std::sync::Arc::from(text),
            format: TextFormat::default(),
            base_text: None,
        }
    }

    #[tokio::test]
    async fn crlf_file_round_trips_through_read_and_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("a.txt");
        fs::write(&p, b"one\r\ntwo\r\n").expect("write");
        let ed = DiskEditor::new();
        let doc = ed.read(&p).await.expect("read");
        assert_eq!(doc.text, "one\ntwo\n");
        assert_eq!(doc.format.line_ending, LineEnding::CrLf);
        let out = ed
            .write(&p, req(Some(doc.stamp()), "one\n2\nthree\n"))
            .await
            .expect("write");
        assert_eq!(fs::read(&p).expect("read back"), b"one\r\n2\r\nthree\r\n");
        assert_eq!(out.changed_lines, Some((2, 3)));
        assert!(!out.in_buffer && out.saved);
        assert_eq!(out.stamp, ed.read(&p).await.expect("reread").stamp());
    }

    #[tokio::test]
    async fn stale_when_text_changed_and_nothing_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("a.txt");
        fs::write(&p, "v1\n").expect("write");
        let ed = DiskEditor::new();
        let stamp = ed.read(&p).await.expect("read").stamp();
        fs::write(&p, "v2 by someone else\n").expect("write");
        let err = ed
            .write(&p, req(Some(stamp.clone()), "mine\n"))
            .await
            .unwrap_err();
        assert_eq!(err, EditorError::Stale(p.clone()));
        assert_eq!(
            fs::read_to_string(&p).expect("read"),
            "v2 by someone else\n"
        );
        // Same text rewritten (mtime moves, hash equal): not stale.
        fs::write(&p, "v1\n").expect("write");
        ed.write(&p, req(Some(stamp), "mine\n"))
            .await
            .expect("not stale");
        assert_eq!(fs::read_to_string(&p).expect("read"), "mine\n");
    }

    #[tokio::test]
    async fn create_refuses_existing_and_makes_parent_dirs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("deep/er/new.txt");
        let ed = DiskEditor::new();
        let out = ed.write(&p, req(None, "x")).await.expect("create");
        assert_eq!(fs::read(&p).expect("read"), b"x");
        assert_eq!(out.changed_lines, Some((1, 1)));
        assert_eq!(
            ed.write(&p, req(None, "y")).await.unwrap_err(),
            EditorError::AlreadyExists(p.clone())
        );
        assert!(matches!(
            ed.read(&dir.path().join("deep")).await,
            Err(EditorError::IsDirectory(_))
        ));
        assert!(matches!(
            ed.read(&dir.path().join("nope")).await,
            Err(EditorError::NotFound(_))
        ));
        let leftovers: Vec<_> = fs::read_dir(p.parent().expect("parent"))
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(
            leftovers,
            vec![std::ffi::OsString::from("new.txt")],
            "no temp file left behind"
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn writes_through_symlink_keeping_link_and_permissions() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("real.sh");
        fs::write(&target, "echo 1\n").expect("write");
        fs::set_permissions(&target, fs::Permissions::from_mode(0o751)).expect("chmod");
        let link = dir.path().join("link.sh");
        symlink("real.sh", &link).expect("symlink");
        let ed = DiskEditor::new();
        let doc = ed.read(&link).await.expect("read");
        ed.write(&link, req(Some(doc.stamp()), "echo 2\n"))
            .await
            .expect("write");
        assert!(fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&target).expect("read"), "echo 2\n");
        assert_eq!(
            fs::metadata(&target).expect("stat").permissions().mode() & 0o777,
            0o751
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlink_loop_is_bad_path_not_a_hang() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().expect("tempdir");
        symlink("b", dir.path().join("a")).expect("symlink");
        symlink("a", dir.path().join("b")).expect("symlink");
        let ed = DiskEditor::new();
        let p = dir.path().join("a");
        assert!(matches!(
            ed.read(&p).await,
            Err(EditorError::BadPath { .. })
        ));
        assert!(matches!(
            ed.write(&p, req(None, "x")).await,
            Err(EditorError::BadPath { .. })
        ));
        let through = dir.path().join("a/inner.txt");
        assert!(matches!(
            ed.read(&through).await,
            Err(EditorError::BadPath { .. }) | Err(EditorError::Io { .. })
        ));
    }

    #[tokio::test]
    async fn unencodable_text_leaves_latin1_file_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("l1.txt");
        fs::write(&p, b"caf\xE9\n").expect("write");
        let ed = DiskEditor::new();
        let doc = ed.read(&p).await.expect("read");
        let err = ed
            .write(&p, req(Some(doc.stamp()), "caf\u{e9} \u{2192}\n"))
            .await
            .unwrap_err();
        assert!(matches!(err, EditorError::Unencodable { .. }), "{err:?}");
        assert_eq!(fs::read(&p).expect("read"), b"caf\xE9\n");
    }
}
