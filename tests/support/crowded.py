"""A crowded marketplace, shaped like the big public ones (one folder per plugin, each with a
manifest and one or two skills, `.claude-plugin/marketplace.json` listing them all): 59 other
plugins with 90 skills whose descriptions are of realistic length (250 to 400 characters),
and `ledger-tools`, the plugin under test, with two skills and trigger cases.

`write(root)` writes it; the skills' text is made from the table below, so each description
says what its skill does and when to use it, as a maintainer writes one.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

DOMAINS = [
    # plugin, subject, what it works on, two skills (verb-name, what it does)
    ("terraform-kit", "Terraform", "modules, plans and state files",
     [("plan-review", "review a plan for destroyed resources, drift and risky replacements"),
      ("module-scaffold", "scaffold a module with variables, outputs and examples")]),
    ("k8s-helper", "Kubernetes", "manifests, Helm charts and rollouts",
     [("manifest-lint", "lint manifests for missing probes, limits and labels"),
      ("rollout-debug", "debug a stuck rollout from events, pod logs and conditions")]),
    ("docker-doctor", "Docker", "Dockerfiles, images and compose files",
     [("image-slimmer", "shrink an image with multi-stage builds and smaller bases")]),
    ("py-quality", "Python", "packages, type hints and tests",
     [("typing-upgrade", "add type hints and fix what mypy reports"),
      ("pytest-writer", "write pytest tests with fixtures and parametrised cases")]),
    ("js-toolbox", "JavaScript", "bundles, ESM packages and Node scripts",
     [("esm-migrator", "move a CommonJS package to ES modules"),
      ("bundle-analyzer", "find what makes a bundle large and split it")]),
    ("react-studio", "React", "components, hooks and state",
     [("hook-extractor", "pull repeated logic out of components into custom hooks"),
      ("a11y-audit", "audit components for keyboard, label and contrast problems")]),
    ("sql-workbench", "SQL", "queries, indexes and schemas",
     [("query-tuner", "speed up a slow query with indexes and rewritten joins"),
      ("schema-diff", "compare two schemas and write the migration between them")]),
    ("postgres-ops", "PostgreSQL", "replicas, vacuum and locks",
     [("lock-inspector", "find the sessions holding locks and what they block")]),
    ("redis-tools", "Redis", "keys, memory and eviction",
     [("memory-report", "report which key patterns use the most memory"),
      ("ttl-planner", "plan expiry times for cache keys")]),
    ("kafka-pilot", "Kafka", "topics, consumer groups and lag",
     [("lag-triage", "triage consumer lag by partition and consumer"),
      ("topic-sizer", "size partitions and retention for a new topic")]),
    ("aws-guide", "AWS", "IAM policies, S3 buckets and Lambda functions",
     [("iam-least-privilege", "tighten an IAM policy to the actions really used"),
      ("s3-audit", "audit buckets for public access, encryption and lifecycle rules")]),
    ("gcp-guide", "Google Cloud", "projects, service accounts and Cloud Run",
     [("cloud-run-deploy", "deploy a container to Cloud Run with secrets and scaling")]),
    ("azure-guide", "Azure", "resource groups, Bicep files and App Service",
     [("bicep-review", "review Bicep templates for naming, SKUs and secrets")]),
    ("git-flow", "Git", "branches, rebases and history",
     [("rebase-rescue", "recover from a rebase that went wrong using the reflog"),
      ("history-cleaner", "squash and reword commits before a merge")]),
    ("gh-actions", "GitHub Actions", "workflows, runners and caches",
     [("workflow-speedup", "cut workflow time with caches, matrices and path filters"),
      ("action-pinning", "pin third-party actions to commit SHAs")]),
    ("ci-doctor", "CI pipelines", "flaky jobs and build logs",
     [("flaky-finder", "find flaky tests from several runs' results")]),
    ("security-scan", "application security", "dependencies, secrets and headers",
     [("secret-sweep", "sweep a repository for committed keys and tokens"),
      ("dependency-triage", "triage vulnerable dependencies by reachability")]),
    ("auth-kit", "authentication", "OAuth flows, sessions and JWTs",
     [("jwt-inspector", "decode a JWT and check its claims, expiry and signature")]),
    ("api-designer", "HTTP APIs", "OpenAPI documents and endpoints",
     [("openapi-lint", "lint an OpenAPI document for naming and error responses"),
      ("pagination-design", "design cursor pagination for list endpoints")]),
    ("graphql-lab", "GraphQL", "schemas, resolvers and queries",
     [("n-plus-one-hunter", "find N+1 queries in resolvers and batch them")]),
    ("grpc-tools", "gRPC", "protobuf files and services",
     [("proto-breaking-check", "check protobuf changes for breaking field edits")]),
    ("observability", "observability", "metrics, traces and dashboards",
     [("slo-writer", "write SLOs and burn-rate alerts for a service"),
      ("trace-reader", "read a distributed trace to find the slow span")]),
    ("logging-kit", "logging", "structured logs and log levels",
     [("log-structurer", "turn print statements into structured log calls")]),
    ("incident-desk", "incident response", "pages, timelines and postmortems",
     [("postmortem-draft", "draft a blameless postmortem from the incident timeline"),
      ("runbook-writer", "write a runbook for a recurring alert")]),
    ("data-pipelines", "data pipelines", "Airflow DAGs and dbt models",
     [("dag-doctor", "fix failing Airflow DAGs and their retries"),
      ("dbt-tester", "add dbt tests for keys, nulls and accepted values")]),
    ("spark-tuning", "Spark", "jobs, partitions and shuffles",
     [("shuffle-reducer", "reduce shuffles and skew in a Spark job")]),
    ("ml-ops", "machine learning", "training runs and model cards",
     [("experiment-compare", "compare training runs by their metrics and settings"),
      ("model-card", "write a model card with data, metrics and limits")]),
    ("notebook-tidy", "Jupyter", "notebooks and their outputs",
     [("notebook-to-module", "turn notebook cells into a tested Python module")]),
    ("pandas-pro", "pandas", "data frames and CSV files",
     [("dataframe-profiler", "profile a data frame's columns, types and missing values"),
      ("merge-debugger", "explain why a merge of two data frames lost or duplicated rows")]),
    ("chart-maker", "charts", "plots and figures",
     [("chart-picker", "pick the right chart type for a table and draw it")]),
    ("docs-writer", "documentation", "READMEs, guides and API references",
     [("readme-refresh", "refresh a README's install and usage sections"),
      ("docstring-writer", "write docstrings for public functions and classes")]),
    ("changelog-bot", "changelogs", "release notes and version bumps",
     [("semver-bumper", "pick the next semantic version from the commits")]),
    ("i18n-helper", "internationalisation", "message catalogs and locales",
     [("string-extractor", "extract hard-coded strings into message catalogs"),
      ("plural-rules", "fix plural forms and ICU messages per locale")]),
    ("css-studio", "CSS", "stylesheets, layout and themes",
     [("layout-fixer", "fix overflowing and misaligned flexbox and grid layouts"),
      ("theme-tokens", "move colours and spacing into design tokens")]),
    ("mobile-dev", "mobile apps", "iOS and Android builds",
     [("crash-symbolicator", "symbolicate a crash report and find the faulty frame")]),
    ("swift-kit", "Swift", "SwiftUI views and concurrency",
     [("async-migrator", "move completion handlers to async and await")]),
    ("kotlin-kit", "Kotlin", "coroutines and Gradle builds",
     [("gradle-speedup", "speed up a Gradle build with caching and configuration")]),
    ("rust-helper", "Rust", "crates, lifetimes and Cargo",
     [("borrow-fixer", "fix borrow checker errors without needless clones"),
      ("crate-audit", "audit crate dependencies for licences and advisories")]),
    ("go-helper", "Go", "modules, goroutines and tests",
     [("race-hunter", "find data races with the race detector and fix them"),
      ("table-tests", "write table-driven tests for a Go package")]),
    ("java-helper", "Java", "Maven projects and the JVM",
     [("heap-dump-reader", "read a heap dump to find what leaks memory")]),
    ("dotnet-helper", ".NET", "C# projects and NuGet packages",
     [("nullable-enabler", "turn on nullable reference types and fix the warnings")]),
    ("php-helper", "PHP", "Laravel apps and Composer",
     [("laravel-upgrade", "upgrade a Laravel app across major versions")]),
    ("ruby-helper", "Ruby", "Rails apps and gems",
     [("n1-rails", "find N+1 queries in Rails views and add includes"),
      ("gem-updater", "update gems safely with their changelogs")]),
    ("shell-pro", "shell scripts", "Bash scripts and one-liners",
     [("script-hardener", "harden a Bash script with strict mode and quoting"),
      ("oneliner-explainer", "explain what a shell one-liner does, step by step")]),
    ("regex-lab", "regular expressions", "patterns and their tests",
     [("regex-builder", "build a regular expression from examples and test it")]),
    ("perf-lab", "performance", "profiles and benchmarks",
     [("flamegraph-reader", "read a flame graph and name the hot path"),
      ("benchmark-writer", "write a repeatable benchmark with warm-up and statistics")]),
    ("cost-watch", "cloud costs", "bills and usage reports",
     [("cost-spike-finder", "find what made the cloud bill jump this month")]),
    ("email-kit", "email", "templates and deliverability",
     [("deliverability-check", "check SPF, DKIM and DMARC records for a domain")]),
    ("seo-helper", "SEO", "pages, sitemaps and metadata",
     [("meta-tags", "write titles, descriptions and social tags for pages")]),
    ("design-review", "UI design", "mockups and design systems",
     [("figma-handoff", "turn a design handoff into component specs"),
      ("ux-copy", "tighten button labels, empty states and error messages")]),
    ("product-notes", "product management", "PRDs and roadmaps",
     [("prd-writer", "write a product requirements document from rough notes"),
      ("roadmap-planner", "order a roadmap by impact, effort and risk")]),
    ("meeting-kit", "meetings", "agendas, notes and action items",
     [("minutes-writer", "turn a meeting transcript into minutes and action items")]),
    ("hr-helper", "hiring", "job posts and interview loops",
     [("job-post-writer", "write an inclusive job post for a role"),
      ("interview-kit", "build structured interview questions and a rubric")]),
    ("legal-lite", "contracts", "NDAs and terms of service",
     [("clause-explainer", "explain contract clauses in plain words")]),
    ("sales-ops", "sales", "CRM records and pipelines",
     [("pipeline-review", "review a sales pipeline for stale and risky deals")]),
    ("support-desk", "customer support", "tickets and macros",
     [("ticket-triage", "triage support tickets by urgency and topic"),
      ("macro-writer", "write reply macros for common support questions")]),
    ("slides-kit", "presentations", "slide decks and speaker notes",
     [("deck-outliner", "outline a slide deck from a document")]),
    ("research-kit", "research", "papers, sources and citations",
     [("paper-summarizer", "summarise a research paper's method and findings"),
      ("citation-checker", "check citations against their sources")]),
    ("travel-kit", "travel", "itineraries and bookings",
     [("itinerary-builder", "build a day-by-day itinerary within a budget")]),
]

VARIANTS = [
    "{Subject} {does}. Works on {things}, reads the project's own files first and explains each change it "
    "proposes before making it. Use when the user asks to {do} or mentions {subject} {things_short}; not for "
    "general questions about {subject}.",
    "Helps with {subject} {things}: {do}. It checks the result against the project's conventions and keeps "
    "changes small and reviewable. Use when someone wants to {do}, or pastes {subject} output and asks what "
    "is wrong with it.",
    "{Subject} assistant that can {do}, with a short report of what it found and what it changed. Trigger on "
    "requests about {subject} {things_short} such as 'can you {do}?'. Skip it for tasks outside {subject}.",
]

PACKAGE = {
    "vendor-invoice-reconciler": (
        "Reconcile supplier invoices against purchase orders and bank statement payments: match amounts "
        "and dates, flag duplicate invoices and partial payments, and write a reconciliation summary with "
        "the open balance per supplier. Use when the user asks to reconcile invoices, match payments to "
        "bills, or find unpaid or double-paid supplier invoices."),
    "expense-report-auditor": (
        "Audit employee expense reports against the travel and expense policy: per diem limits, missing "
        "receipts, personal items and split purchases, with a finding per line and the amount to recover. "
        "Use when the user asks to check, audit or approve expense claims or receipts."),
}

CASES = {
    "invoices-match-payments": ("vendor-invoice-reconciler",
                                "Match last month's supplier invoices with the bank statement payments and "
                                "flag duplicates and partial payments"),
    "expense-claims-audit": ("expense-report-auditor",
                             "Audit these employee expense claims for missing receipts and per diem limits"),
}


def description(subject: str, things: str, does: str, n: int) -> str:
    short = things.split(",")[0].split(" and ")[0]
    text = VARIANTS[n % len(VARIANTS)].format(Subject=subject[0].upper() + subject[1:], subject=subject,
                                              things=things, things_short=short, does=f"skill to {does}",
                                              do=does)
    return text.replace(f"{subject[0].upper() + subject[1:]} skill to", f"{subject[0].upper() + subject[1:]}: a "
                        "skill to")


def skill_md(name: str, about: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {json.dumps(about)}\n---\n\n# {name}\n\n{body}\n"


def write(root: Path) -> Path:
    """The marketplace at `root`; returns it."""
    plugins = []
    n = 0
    for plugin, subject, things, skills in DOMAINS:
        folder = root / "plugins" / plugin
        manifest = {"name": plugin, "version": "1.2.0", "description": f"{subject} skills for {things}."}
        (folder / ".claude-plugin").mkdir(parents=True, exist_ok=True)
        (folder / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest, indent=2) + "\n")
        for verb, does in skills:
            name = f"{plugin.split('-')[0]}-{verb}"
            about = description(subject, things, does, n)
            n += 1
            (folder / "skills" / name).mkdir(parents=True, exist_ok=True)
            body = (f"1. Read the {subject} files the user points at.\n2. {does[0].upper() + does[1:]}.\n"
                    "3. Say what changed and why, file by file.")
            (folder / "skills" / name / "SKILL.md").write_text(skill_md(name, about, body))
        plugins.append({"name": plugin, "source": f"./plugins/{plugin}", "description": manifest["description"]})
    ours = root / "plugins" / "ledger-tools"
    (ours / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (ours / ".claude-plugin" / "plugin.json").write_text(json.dumps(
        {"name": "ledger-tools", "version": "0.4.0", "description": "Bookkeeping skills."}, indent=2) + "\n")
    for name, about in PACKAGE.items():
        (ours / "skills" / name).mkdir(parents=True, exist_ok=True)
        (ours / "skills" / name / "SKILL.md").write_text(skill_md(
            name, about, "1. Load the files.\n2. Match each line.\n3. Write the summary to reconciliation.md."))
    plugins.append({"name": "ledger-tools", "source": "./plugins/ledger-tools", "description": "Bookkeeping skills."})
    (root / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (root / ".claude-plugin" / "marketplace.json").write_text(json.dumps(
        {"name": "acme-skills", "owner": {"name": "Acme"}, "plugins": plugins}, indent=2) + "\n")
    cases = root / "evals" / "cases" / "ledger-tools"
    cases.mkdir(parents=True, exist_ok=True)
    for case, (skill, prompt) in CASES.items():
        doc = {"name": case, "target": f"skill:{skill}", "input": {"prompt": prompt},
               "expected": {"skill-triggered": True}}
        (cases / f"{case}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    config = {"version": 1, "engine": "claude-code", "timeout": 240, "triggers": {"runs": 1},
              "neighbors": ["marketplace"], "sweep": [0, 20, 100]}
    (root / "evals" / "eval-config.json").write_text(json.dumps(config, indent=2) + "\n")
    return root
