//! Namespaced objects of any kind listed page by page (`limit` and `continue`, as `kubectl get
//! --chunk-size` pages), each handed on as JSON with its `apiVersion` and `kind`: the workloads
//! `outrigger preview` reads, the LimitRanges and ResourceQuotas it checks against, the
//! PodDisruptionBudgets `drift --restart` waits on.

use ::kube::api::ListParams;
use ::kube::core::NamespaceResourceScope;
use ::kube::{Client, Resource};
use anyhow::Result;
use outrigger_inject::kube::pod_list::PodPage;
use serde_json::{Map, Value};

use super::client::api_error;

/// Every object of kind `K` in `namespace` (every namespace when `None`), `chunk` per request,
/// each handed to `each` in the order the API server lists them. Errors name the resource and
/// the namespace.
pub async fn for_each<K>(
    client: Client,
    namespace: Option<&str>,
    chunk: u32,
    mut each: impl FnMut(Value) -> Result<()>,
) -> Result<()>
where
    K: Resource<Scope = NamespaceResourceScope>,
    K::DynamicType: Default,
{
    for_each_page::<K>(client, namespace, chunk, |page| {
        page.into_iter().try_for_each(&mut each)
    })
    .await
}

/// [`for_each`] a page at a time: `each` gets the objects of one page (in the order listed)
/// before the next page is asked for. Each page is decoded straight into JSON trees without
/// `metadata.managedFields` ([`PodPage`], which reads any list: managedFields is often the
/// largest part of a stored object and nothing here reads it), and each object gets the
/// `apiVersion` and `kind` that list items lack, first, as the typed form writes them.
pub async fn for_each_page<K>(
    client: Client,
    namespace: Option<&str>,
    chunk: u32,
    mut each: impl FnMut(Vec<Value>) -> Result<()>,
) -> Result<()>
where
    K: Resource<Scope = NamespaceResourceScope>,
    K::DynamicType: Default,
{
    let dt = K::DynamicType::default();
    let plural = K::plural(&dt).to_string();
    let (api_version, kind) = (K::api_version(&dt).to_string(), K::kind(&dt).to_string());
    let what = match namespace {
        Some(ns) => format!("listing {plural} in namespace {ns}"),
        None => format!("listing {plural}"),
    };
    let url = K::url_path(&dt, namespace);
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(chunk);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let request = ::kube::core::Request::new(&url)
            .list(&params)
            .map_err(|e| api_error(::kube::Error::BuildRequest(e)).context(what.clone()))?;
        let page: PodPage = client
            .request(request)
            .await
            .map_err(|e| api_error(e).context(what.clone()))?;
        let objects = page
            .items
            .into_iter()
            .map(|o| with_type(o, &api_version, &kind))
            .collect();
        each(objects)?;
        match page.continue_token {
            Some(t) => token = Some(t),
            None => return Ok(()),
        }
    }
}

/// `object` with `apiVersion` and `kind` first (list items carry neither).
fn with_type(object: Value, api_version: &str, kind: &str) -> Value {
    let Value::Object(fields) = object else {
        return object;
    };
    let mut out = Map::with_capacity(fields.len() + 2);
    out.insert("apiVersion".into(), Value::String(api_version.to_string()));
    out.insert("kind".into(), Value::String(kind.to_string()));
    for (k, v) in fields {
        if k != "apiVersion" && k != "kind" {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

/// Every object of kind `K` in `namespace` (every namespace when `None`).
pub async fn list<K>(client: Client, namespace: Option<&str>, chunk: u32) -> Result<Vec<Value>>
where
    K: Resource<Scope = NamespaceResourceScope>,
    K::DynamicType: Default,
{
    let mut out = Vec::new();
    for_each::<K>(client, namespace, chunk, |o| {
        out.push(o);
        Ok(())
    })
    .await?;
    Ok(out)
}
