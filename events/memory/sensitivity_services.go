package memory

// The credentials of services whose tokens carry a prefix of their own,
// from the formats their vendors publish (issue 26 item 10: the formats
// gitleaks' default rule set knows and the rules above missed, found by the
// differential test in testdata/gitleaks). Two rules of many
// alternatives: each format's prefix is a trigger, and an alternation runs
// only when one of its triggers occurs; RE2 keeps it linear however many
// formats it holds.
var serviceTokenTriggers = []string{
	"ops_eyj", "atatt3", ".acc_", ".acc-", "absk", "bedrock-api-key-", "clojars_", "dnkey-", "dp.pt.", "dp.st.",
	"dp.sa.", "dp.ct.", "dp.scim.", "dp.audit.", "duffel_", "dt0c01.", "ezak", "eztk", "flwseck", "flwpubk", "fo1_",
	"fm1a_", "fm1r_", "fm2_", "fio-u-", "gr1348941", "_gitlab_session=", "eyjrijoi", "glc_", "glsa_", ".atlasv1.",
	"hrku-", "api_org_", "lin_api_", "_mmk", "sha256~", "pplx-", "pscale_", "pmak-", "pnu_",
	"rdme_", "rubygems_", "tk-us-", "xkeysib-", "sntrys_", "sntryu_", "sm_aat_", "sm_pat_", "sm_sat_",
	"shippo_", "eaaa", "sq0atp-", "sq0csp-", "eaam", "eaac", "ntn_", "sgp_", ".webhook.office.com/webhookb2/",
	"aaaaaaaaaaaaaaaaaaaaaa", "pubkey-", "nrak-", "nrii-", "nrjs-", "tfp_", "aqvn", "ltai", "p8e-", "s-s4t2", "__contribsys__com",
	"sqp_", "squ_", "sqa_",
}

// serviceTokenPattern: each alternative is bounded on the left by a
// non-word character (or the text's start) and on the right by the end of
// the token's alphabet.
const serviceTokenPattern = `(?:^|[^A-Za-z0-9_])(?:` +
	`ops_eyJ[A-Za-z0-9+/]{250,}` + // 1Password service account
	`|ATATT3[A-Za-z0-9_=-]{150,}` + // Atlassian API token
	`|(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][A-Za-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,}` + // Authress
	`|ABSK[A-Za-z0-9+/]{109,}|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t` + // Amazon Bedrock
	`|(?i:clojars_)[A-Za-z0-9]{60}` + // Clojars
	`|dnkey-[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}` + // Defined Networking
	`|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}` + // Doppler
	`|duffel_(?:test|live)_[A-Za-z0-9_=-]{43}` + // Duffel
	`|dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}` + // Dynatrace
	`|EZ[AT]K[A-Za-z0-9]{54}` + // EasyPost
	`|FLW(?:SECK|PUBK)(?:_TEST)?-[A-Za-z0-9]{12,32}` + // Flutterwave
	`|fo1_[A-Za-z0-9_-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,}|fm2_[A-Za-z0-9+/]{100,}` + // Fly.io
	`|fio-u-[A-Za-z0-9_=-]{64}` + // Frame.io
	`|GR1348941[A-Za-z0-9_-]{20}|_gitlab_session=[0-9a-z]{32}` + // GitLab runner registration, session
	`|eyJrIjoi[A-Za-z0-9]{70,}|glc_[A-Za-z0-9+/]{32,}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}` + // Grafana
	`|[a-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}` + // HashiCorp Terraform
	`|HRKU-AA[0-9A-Za-z_-]{58}` + // Heroku
	`|api_org_[A-Za-z]{34}` + // Hugging Face organization
	`|lin_api_[A-Za-z0-9]{40}` + // Linear
	`|[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk` + // MaxMind
	`|sha256~[A-Za-z0-9_-]{43}` + // OpenShift
	`|pplx-[A-Za-z0-9]{48}` + // Perplexity
	`|pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}` + // PlanetScale
	`|PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}` + // Postman
	`|pnu_[A-Za-z0-9]{36}` + // Prefect
	`|rdme_[a-z0-9]{70}` + // ReadMe
	`|rubygems_[a-f0-9]{48}` + // RubyGems
	`|tk-us-[A-Za-z0-9_-]{48}` + // Scalingo
	`|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}` + // Brevo (Sendinblue)
	`|sntrys_eyJ[A-Za-z0-9+/=_]{60,}|sntryu_[a-f0-9]{64}` + // Sentry
	`|sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}` + // SettleMint
	`|shippo_(?:live|test)_[A-Fa-f0-9]{40}` + // Shippo
	`|(?:EAAA|sq0atp-)[A-Za-z0-9_-]{22,60}|sq0csp-[A-Za-z0-9_-]{43}` + // Square
	`|EAA[MC][A-Za-z0-9]{100,}` + // Facebook page access token
	`|ntn_[0-9]{11}[A-Za-z0-9]{35}` + // Notion
	`|sgp_(?:[A-Fa-f0-9]{16}|local)_[A-Fa-f0-9]{40}|sgp_[A-Fa-f0-9]{40}` + // Sourcegraph
	`|[a-z0-9]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/-]{40,}` + // Microsoft Teams webhook
	`|A{22}[A-Za-z0-9%]{80,}` + // Twitter (X) bearer token
	`|pubkey-[a-f0-9]{32}` + // Mailgun public key
	`|NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9-]{32}|NRJS-[a-f0-9]{19}` + // New Relic
	`|tfp_[A-Za-z0-9_.=-]{59}` + // Typeform
	`|AQVN[A-Za-z0-9_-]{35,38}` + // Yandex API key
	`|LTAI[A-Za-z0-9]{20}` + // Alibaba Cloud access key id
	`|p8e-[A-Za-z0-9]{32}` + // Adobe client secret
	`|s-s4t2(?:ud|af)-[a-f0-9]{64}` + // 42 intra client secret
	`|BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM\s*[:=]\s*["']?[a-f0-9]{8}:[a-f0-9]{8}` + // Sidekiq
	`|sq[pua]_[A-Za-z0-9]{40}` + // SonarQube
	`)(?:[^A-Za-z0-9_]|$)`

// The formats whose prefixes are short enough to occur in prose (api-,
// pat., -us, a3-, a hex digest's 4b1d...): a rule of their own, so that a
// text that triggers one of them compiles this small pattern, not the one
// above.
var serviceTokenShortTriggers = []string{"a3-", "4b1d", "v1.0-", "dapi", "pat.", "sat.", "ico-", "api-", "pul-", "q~", "-us"}

const serviceTokenShortPattern = `(?:^|[^A-Za-z0-9_])(?:` +
	`A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}` + // 1Password secret key
	`|4b1d[A-Za-z0-9]{38}` + // ClickHouse Cloud
	`|v1\.0-[a-f0-9]{24}-[a-f0-9]{146}` + // Cloudflare origin CA
	`|dapi[a-f0-9]{32}` + // Databricks
	`|(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}` + // Harness
	`|ico-[A-Za-z0-9]{32}` + // Infracost
	`|API-[A-Z0-9]{26}` + // Octopus Deploy
	`|pul-[a-f0-9]{40}` + // Pulumi
	`|[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}` + // Azure AD client secret
	`|[a-f0-9]{32}-us[0-9]{1,2}` + // Mailchimp
	`)(?:[^A-Za-z0-9_]|$)`
