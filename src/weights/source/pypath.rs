//! The functions of Python's `posixpath` that ComfyUI applies to the paths of its
//! `extra_model_paths.yaml`, with their results byte for byte: `expanduser` (a leading `~`
//! or `~user`), `expandvars` (`$NAME` and `${NAME}` of set variables, one pass, unset ones
//! left as written), `join` and `normpath` (lexical: `..` drops the previous part, links are
//! not looked at; a leading `//` stays).
//!
//! Must not: touch the file system (`abspath` reads only the working folder).
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// `os.path.expanduser`: `~` from `$HOME` when set (even empty), else the user's entry in
/// the password database; `~user` from that user's entry; the path as it is when there is
/// none.
pub fn expanduser(path: &[u8]) -> Vec<u8> {
    if path.first() != Some(&b'~') {
        return path.to_vec();
    }
    let end = path[1..].iter().position(|&b| b == b'/').map_or(path.len(), |i| i + 1);
    let home = if end == 1 {
        match std::env::var_os("HOME") {
            Some(h) => Some(h.into_vec()),
            None => passwd_home(None),
        }
    } else {
        passwd_home(Some(&path[1..end]))
    };
    let Some(mut home) = home else {
        return path.to_vec();
    };
    while home.last() == Some(&b'/') {
        home.pop();
    }
    home.extend_from_slice(&path[end..]);
    if home.is_empty() {
        home.push(b'/');
    }
    home
}

/// The home folder of `user` (the current user for `None`) in the password database.
fn passwd_home(user: Option<&[u8]>) -> Option<Vec<u8>> {
    let name = match user {
        Some(u) => Some(std::ffi::CString::new(u).ok()?),
        None => None,
    };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: every pointer handed to getpw*_r points to live memory of the size given;
    // `pw_dir` points into `buf` and is read before `buf` is dropped.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut out: *mut libc::passwd = std::ptr::null_mut();
        let rc = match &name {
            Some(n) => libc::getpwnam_r(n.as_ptr(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut out),
            None => libc::getpwuid_r(libc::getuid(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut out),
        };
        if rc != 0 || out.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        Some(std::ffi::CStr::from_ptr(pwd.pw_dir).to_bytes().to_vec())
    }
}

/// `os.path.expandvars`: each `$NAME` (ASCII letters, digits, `_`) or `${NAME}` of a set
/// variable replaced by its value, which is not expanded again; the others left as written.
pub fn expandvars(path: &[u8]) -> Vec<u8> {
    expandvars_with(path, |name| {
        let name = OsStr::from_bytes(name);
        let usable = !name.is_empty() && !name.as_bytes().contains(&b'=') && !name.as_bytes().contains(&0);
        usable.then(|| std::env::var_os(name)).flatten().map(OsString::into_vec)
    })
}

fn expandvars_with(path: &[u8], lookup: impl Fn(&[u8]) -> Option<Vec<u8>>) -> Vec<u8> {
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let mut out = Vec::with_capacity(path.len());
    let mut i = 0;
    while i < path.len() {
        if path[i] == b'$' {
            let rest = &path[i + 1..];
            let (name, len) = if rest.first().is_some_and(word) {
                let n = rest.iter().take_while(|b| word(b)).count();
                (Some(&rest[..n]), n)
            } else if rest.first() == Some(&b'{') {
                match rest.iter().position(|&b| b == b'}') {
                    Some(close) => (Some(&rest[1..close]), close + 1),
                    None => (None, 0),
                }
            } else {
                (None, 0)
            };
            if let Some(name) = name {
                match lookup(name) {
                    Some(value) => out.extend_from_slice(&value),
                    None => out.extend_from_slice(&path[i..i + 1 + len]),
                }
                i += 1 + len;
                continue;
            }
        }
        out.push(path[i]);
        i += 1;
    }
    out
}

/// `os.path.join(a, b)`: `b` when it is absolute, else `a`, a `/` unless `a` is empty or ends
/// in one, and `b`.
pub fn join(a: &[u8], b: &[u8]) -> Vec<u8> {
    if b.first() == Some(&b'/') {
        return b.to_vec();
    }
    let mut out = a.to_vec();
    if !out.is_empty() && out.last() != Some(&b'/') {
        out.push(b'/');
    }
    out.extend_from_slice(b);
    out
}

/// `os.path.normpath`.
pub fn normpath(path: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b".".to_vec();
    }
    let slashes = match path.iter().take_while(|&&b| b == b'/').count() {
        0 => 0,
        2 => 2,
        _ => 1,
    };
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." if slashes > 0 && parts.is_empty() => {}
            b".." if parts.last().is_some_and(|p| *p != b"..") => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    let mut out = vec![b'/'; slashes];
    out.extend_from_slice(&parts.join(&b'/'));
    if out.is_empty() {
        out.push(b'.');
    }
    out
}

/// `os.path.abspath`: `path` under the working folder when relative, normalized.
pub fn abspath(path: &[u8]) -> Vec<u8> {
    match path.first() == Some(&b'/') {
        true => normpath(path),
        false => {
            let cwd = std::env::current_dir()
                .map(|d| d.into_os_string().into_vec())
                .unwrap_or_default();
            normpath(&join(&cwd, path))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: Vec<u8>) -> String {
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn expandvars_follows_python() {
        let env = |n: &[u8]| match n {
            b"SHARED" => Some(b"/data/$HOME".to_vec()),
            b"a b" => Some(b"X".to_vec()),
            _ => None,
        };
        let cases = [
            ("$SHARED/models", "/data/$HOME/models"),
            ("${SHARED}x", "/data/$HOMEx"),
            ("$SHAREDx/$UNSET/${UNSET}", "$SHAREDx/$UNSET/${UNSET}"),
            ("${a b}-${}-${open-$-$$SHARED", "X-${}-${open-$-$/data/$HOME"),
            ("%SHARED%/~", "%SHARED%/~"),
        ];
        for (input, want) in cases {
            assert_eq!(s(expandvars_with(input.as_bytes(), env)), want, "{input}");
        }
    }

    #[test]
    fn normpath_join_and_expanduser_follow_python() {
        let cases = [
            ("", "."),
            ("a/./b//c/", "a/b/c"),
            ("/a/../../b", "/b"),
            ("//a/../b", "//b"),
            ("///a", "/a"),
            ("../a/../../b", "../../b"),
            ("a/..", "."),
        ];
        for (input, want) in cases {
            assert_eq!(s(normpath(input.as_bytes())), want, "{input}");
        }
        assert_eq!(s(join(b"/base/", b"x")), "/base/x");
        assert_eq!(s(join(b"/base", b"/abs")), "/abs");
        assert_eq!(s(join(b"", b"x")), "x");
        assert_eq!(s(expanduser(b"a/~")), "a/~");
        assert_eq!(s(expanduser(b"~no-such-user-here/x")), "~no-such-user-here/x");
        if let Some(home) = std::env::var_os("HOME") {
            let home = home.into_vec();
            let mut want = home.clone();
            while want.len() > 1 && want.last() == Some(&b'/') {
                want.pop();
            }
            assert_eq!(expanduser(b"~/x"), join(&want, b"x"));
        }
    }
}
