//! The pods `outrigger drift --kube` examines: listed page by page (`limit` and `continue`, as
//! `kubectl get --chunk-size` does), each page handed on before the next is read, so memory
//! follows the page, not the cluster; and the labels of their namespaces.

use std::collections::BTreeMap;

use ::kube::api::ListParams;
use ::kube::{Api, Client};
use anyhow::Result;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use outrigger_inject::kube::pod_list::PodPage;
use serde_json::{Map, Value};

use super::client::api_error;

/// `e` as one message, after what was asked (the cluster's conventions: [`api_error`]).
fn failed(e: ::kube::Error, what: &str) -> anyhow::Error {
    api_error(e).context(what.to_string())
}

/// Every pod of `namespace` (every namespace when `None`), `chunk` per request, each handed to
/// `each` as JSON in the order the API server lists them, without `metadata.managedFields`
/// (skipped while decoding: [`PodPage`]). Each page is decoded from the response and examined
/// before the next is asked for, and dropped after, so memory follows the page.
#[allow(
    dead_code,
    reason = "the pod-at-a-time form of for_each_page, for readers without per-page work"
)]
pub async fn for_each(
    client: Client,
    namespace: Option<&str>,
    chunk: u32,
    mut each: impl FnMut(Value) -> Result<()>,
) -> Result<()> {
    for_each_page(client, namespace, chunk, |items| {
        items.into_iter().try_for_each(&mut each)
    })
    .await
}

/// [`for_each`] a page at a time: `each` gets the pods of one page (in the order listed).
pub async fn for_each_page(
    client: Client,
    namespace: Option<&str>,
    chunk: u32,
    mut each: impl FnMut(Vec<Value>) -> Result<()>,
) -> Result<()> {
    let what = match namespace {
        Some(ns) => format!("listing pods in namespace {ns}"),
        None => "listing pods".to_string(),
    };
    let url = <Pod as ::kube::Resource>::url_path(&(), namespace);
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(chunk);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let request = ::kube::core::Request::new(&url)
            .list(&params)
            .map_err(|e| failed(::kube::Error::BuildRequest(e), &what))?;
        let page: PodPage = client
            .request(request)
            .await
            .map_err(|e| failed(e, &what))?;
        each(page.items)?;
        match page.continue_token {
            Some(t) => token = Some(t),
            None => return Ok(()),
        }
    }
}

/// The labels of `namespace` (of every namespace when `None`), by name.
pub async fn namespace_labels(
    client: Client,
    namespace: Option<&str>,
) -> Result<BTreeMap<String, Map<String, Value>>> {
    let api = Api::<Namespace>::all(client);
    let labels_of = |ns: Namespace| {
        let name = ns.metadata.name.unwrap_or_default();
        let labels = ns
            .metadata
            .labels
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        (name, labels)
    };
    match namespace {
        Some(ns) => {
            let got = api
                .get(ns)
                .await
                .map_err(|e| failed(e, &format!("reading namespace {ns}")))?;
            Ok([labels_of(got)].into_iter().collect())
        }
        None => {
            let mut out = BTreeMap::new();
            let mut token: Option<String> = None;
            loop {
                let mut params = ListParams::default().limit(500);
                if let Some(t) = &token {
                    params = params.continue_token(t);
                }
                let page = api
                    .list(&params)
                    .await
                    .map_err(|e| failed(e, "listing namespaces"))?;
                out.extend(page.items.into_iter().map(labels_of));
                match page.metadata.continue_ {
                    Some(t) if !t.is_empty() => token = Some(t),
                    _ => return Ok(out),
                }
            }
        }
    }
}
