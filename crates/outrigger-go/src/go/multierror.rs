//! HashiCorp go-multierror's default text, as Istio reports several failures at once.

/// HashiCorp multierror text: `1 error occurred:\n\t* msg\n\n`.
pub fn format_multierror(errs: &[String]) -> String {
    let head = if errs.len() == 1 {
        "1 error occurred:".to_string()
    } else {
        format!("{} errors occurred:", errs.len())
    };
    let body: String = errs.iter().map(|e| format!("\n\t* {e}")).collect();
    format!("{head}{body}\n\n")
}
