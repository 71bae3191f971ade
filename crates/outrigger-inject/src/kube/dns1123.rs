//! Kubernetes' DNS-1123 name rules (`k8s.io/apimachinery/pkg/util/validation`), the one
//! definition every check of a namespace, Service, revision, webhook or label-prefix name uses.

/// Kubernetes `IsDNS1123Label`: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters. What the
/// API server requires of namespace and Service names, and Istio of revision names.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && b.len() <= 63 && is_label_shape(b)
}

/// Kubernetes `IsDNS1123Subdomain`: at most 253 characters of dot-separated parts, each
/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (the regular expression bounds only the whole, not a part).
/// What the API server requires of most object names and of label-key prefixes.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|part| is_label_shape(part.as_bytes()))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_label_shape(b: &[u8]) -> bool {
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains_follow_kubernetes() {
        for good in ["a", "canary", "1-24", "0", &"x".repeat(63)] {
            assert!(is_dns1123_label(good), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", "1.28", &"x".repeat(64)] {
            assert!(!is_dns1123_label(bad), "{bad}");
        }
        for good in [
            "a",
            "a.b.c",
            "example.com",
            &"x".repeat(64),
            &"x".repeat(253),
        ] {
            assert!(is_dns1123_subdomain(good), "{good}");
        }
        for bad in ["", "a..b", ".a", "a.", "A.b", "a_b.c", &"x".repeat(254)] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }
}
