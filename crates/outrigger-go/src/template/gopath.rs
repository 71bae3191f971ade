//! Go's `path` package (`Clean`, `Base`, `Dir`, `Ext`, `IsAbs`), which Sprig's path functions
//! call; on Linux `path/filepath` (Sprig's `os*` functions) behaves the same.

/// `path.Clean`: the shortest equivalent path by lexical processing.
pub fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let p = path.as_bytes();
    let rooted = p[0] == b'/';
    let n = p.len();
    let mut out: Vec<u8> = Vec::with_capacity(n);
    let (mut r, mut dotdot) = (0, 0);
    if rooted {
        out.push(b'/');
        r = 1;
        dotdot = 1;
    }
    while r < n {
        // An empty element (`//`) or `.`: skip it.
        if p[r] == b'/' || (p[r] == b'.' && (r + 1 == n || p[r + 1] == b'/')) {
            r += 1;
        } else if p[r] == b'.' && p[r + 1] == b'.' && (r + 2 == n || p[r + 2] == b'/') {
            r += 2;
            if out.len() > dotdot {
                // Back up to the previous separator (Go's lazybuf `w--` loop).
                let mut w = out.len() - 1;
                while w > dotdot && out[w] != b'/' {
                    w -= 1;
                }
                out.truncate(w);
            } else if !rooted {
                if !out.is_empty() {
                    out.push(b'/');
                }
                out.extend_from_slice(b"..");
                dotdot = out.len();
            }
        } else {
            if (rooted && out.len() != 1) || (!rooted && !out.is_empty()) {
                out.push(b'/');
            }
            while r < n && p[r] != b'/' {
                out.push(p[r]);
                r += 1;
            }
        }
    }
    if out.is_empty() {
        return ".".into();
    }
    // Only ASCII bytes were removed or added: the rest is the input's UTF-8, in order.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `path.Base`: the last element (`.` for empty, `/` for only slashes).
pub fn base(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// `path.Dir`: everything but the last element, cleaned.
pub fn dir(path: &str) -> String {
    let split = path.rfind('/').map_or(0, |i| i + 1);
    clean(&path[..split])
}

/// `path.Ext`: the extension of the last element, dot included (empty when none).
pub fn ext(path: &str) -> String {
    let last = path.rsplit('/').next().unwrap_or(path);
    last.rfind('.')
        .map_or(String::new(), |i| last[i..].to_string())
}

/// `path.IsAbs`.
pub fn is_abs(path: &str) -> bool {
    path.starts_with('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_base_dir_ext_match_go() {
        let cases: &[(&str, &str, &str, &str, &str)] = &[
            // input, Clean, Base, Dir, Ext (printed by Go's `path` package)
            ("", ".", ".", ".", ""),
            ("/", "/", "/", "/", ""),
            ("a/b/c", "a/b/c", "c", "a/b", ""),
            ("a/b/", "a/b", "b", "a/b", ""),
            ("a//b", "a/b", "b", "a", ""),
            ("/a/../b", "/b", "b", "/", ""),
            ("../../a", "../../a", "a", "../..", ""),
            ("a/../..", "..", "..", ".", "."),
            ("./x.tar.gz", "x.tar.gz", "x.tar.gz", ".", ".gz"),
            ("/..", "/", "..", "/", "."),
            ("a/./b/../c/", "a/c", "c", "a/c", ""),
            ("abc/def/../../..", "..", "..", ".", "."),
            ("/abc/def/../../..", "/", "..", "/", "."),
            ("x/.hidden", "x/.hidden", ".hidden", "x", ".hidden"),
            ("a.b/c", "a.b/c", "c", "a.b", ""),
            ("é/ü.txt", "é/ü.txt", "ü.txt", "é", ".txt"),
            ("//a//b//", "/a/b", "b", "/a/b", ""),
            ("a/b/../../../c", "../c", "c", "..", ""),
            (".", ".", ".", ".", "."),
            ("..", "..", "..", ".", "."),
            ("./", ".", ".", ".", ""),
        ];
        for &(input, c, b, d, e) in cases {
            assert_eq!(clean(input), c, "Clean({input:?})");
            assert_eq!(base(input), b, "Base({input:?})");
            assert_eq!(dir(input), d, "Dir({input:?})");
            assert_eq!(ext(input), e, "Ext({input:?})");
        }
        assert!(is_abs("/a") && !is_abs("a") && !is_abs(""));
    }
}
