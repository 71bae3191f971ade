//! Respond stage: the AdmissionReview response in the request's version, the last step of a
//! webhook review (after [`crate::patch`] has written the JSON Patch).

use crate::go::json as gojson;
use crate::ingest::admission::ApiVersion;

/// What a response says about the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer<'a> {
    /// `allowed: true`, with the JSON Patch when there is one.
    Allow(Option<&'a str>),
    /// `allowed: false`, with this message in `status.message`.
    Refuse(&'a str),
}

/// The response document: `kind`, `apiVersion` (omitted when the request was not
/// decoded), `response{uid, allowed, status, patch, patchType}` in Go struct order.
pub fn encode_response(version: Option<ApiVersion>, uid: &str, answer: Answer<'_>) -> String {
    let patch = match answer {
        Answer::Allow(patch) => patch,
        Answer::Refuse(_) => None,
    };
    let mut s = String::with_capacity(128 + patch.map_or(0, |p| p.len() * 4 / 3 + 4));
    s.push('{');
    if let Some(v) = version {
        s.push_str("\"kind\":\"AdmissionReview\",\"apiVersion\":");
        gojson::write_str(&mut s, v.as_str());
        s.push(',');
    }
    s.push_str("\"response\":{\"uid\":");
    gojson::write_str(&mut s, uid);
    match answer {
        Answer::Refuse(message) => {
            s.push_str(",\"allowed\":false,\"status\":{\"metadata\":{},\"message\":");
            gojson::write_str(&mut s, message);
            s.push('}');
        }
        Answer::Allow(patch) => {
            s.push_str(",\"allowed\":true");
            if let Some(p) = patch {
                s.push_str(",\"patch\":\"");
                base64_simd::STANDARD.encode_append(p.as_bytes(), &mut s);
                s.push_str("\",\"patchType\":\"JSONPatch\"");
            }
        }
    }
    s.push_str("}}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The patch is standard base64 with padding (what Go's `[]byte` JSON encoding writes), at
    /// every remainder and across the SIMD block sizes.
    #[test]
    fn patches_are_standard_base64_at_every_length() {
        use base64::Engine as _;
        let text: String = (0..300u32)
            .map(|i| char::from(b' ' + (i * 37 % 95) as u8))
            .collect();
        for len in 0..text.len() {
            let patch = &text[..len];
            let r = encode_response(None, "u", Answer::Allow(Some(patch)));
            let want = base64::engine::general_purpose::STANDARD.encode(patch);
            assert!(r.contains(&format!("\"patch\":\"{want}\"")), "{len}: {r}");
        }
    }

    #[test]
    fn response_shapes_are_byte_exact() {
        let failed = Answer::Refuse("bad <a> & \"b\"");
        assert_eq!(
            encode_response(Some(ApiVersion::V1), "id", failed),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"id","allowed":false,"status":{"metadata":{},"message":"bad \u003ca\u003e \u0026 \"b\""}}}"#
        );
        assert_eq!(
            encode_response(
                Some(ApiVersion::V1beta1),
                "id",
                Answer::Allow(Some(r#"[{"op":"add"}]"#))
            ),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","response":{"uid":"id","allowed":true,"patch":"W3sib3AiOiJhZGQifV0=","patchType":"JSONPatch"}}"#
        );
        assert_eq!(
            encode_response(None, "", failed).get(..30),
            Some(r#"{"response":{"uid":"","allowed"#)
        );
    }
}
