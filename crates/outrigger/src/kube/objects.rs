//! Namespaced objects of any kind listed page by page (`limit` and `continue`, as `kubectl get
//! --chunk-size` pages), each handed on as JSON with its `apiVersion` and `kind`: the workloads
//! `outrigger preview` reads, the LimitRanges and ResourceQuotas it checks against, the
//! PodDisruptionBudgets `drift --restart` waits on.

use std::fmt::Debug;

use ::kube::api::ListParams;
use ::kube::core::NamespaceResourceScope;
use ::kube::{Api, Client, Resource};
use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

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
    K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Serialize + Debug,
    K::DynamicType: Default,
{
    for_each_page::<K>(client, namespace, chunk, |page| {
        page.into_iter().try_for_each(&mut each)
    })
    .await
}

/// [`for_each`] a page at a time: `each` gets the objects of one page (in the order listed)
/// before the next page is asked for.
pub async fn for_each_page<K>(
    client: Client,
    namespace: Option<&str>,
    chunk: u32,
    mut each: impl FnMut(Vec<Value>) -> Result<()>,
) -> Result<()>
where
    K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Serialize + Debug,
    K::DynamicType: Default,
{
    let plural = K::plural(&K::DynamicType::default()).to_string();
    let (api, what) = match namespace {
        Some(ns) => (
            Api::<K>::namespaced(client, ns),
            format!("listing {plural} in namespace {ns}"),
        ),
        None => (Api::<K>::all(client), format!("listing {plural}")),
    };
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(chunk);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page = api
            .list(&params)
            .await
            .map_err(|e| api_error(e).context(what.clone()))?;
        let objects = page
            .items
            .into_iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<Value>, _>>()
            .with_context(|| format!("encoding {plural}"))?;
        each(objects)?;
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok(()),
        }
    }
}

/// Every object of kind `K` in `namespace` (every namespace when `None`).
pub async fn list<K>(client: Client, namespace: Option<&str>, chunk: u32) -> Result<Vec<Value>>
where
    K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Serialize + Debug,
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
