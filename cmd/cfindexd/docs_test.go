package main

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"testing"
)

// referenceKeyEntry matches a key's entry in docs/configuration.md: the key
// and its default as a bold TOML line, **`key = default`**.
var referenceKeyEntry = regexp.MustCompile("\\*\\*`([a-z0-9]+) = ([^`]*)`\\*\\*")

// helpFlag matches a flag named in --help.
var helpFlag = regexp.MustCompile(`--([a-z][a-z0-9]*)`)

// TestDocsConfigurationMatchesFlags fails when docs/configuration.md, the one
// configuration reference, and the daemon's flags disagree: every key listed
// once with its true default, nothing listed that is not a key, and every
// other flag --help names (--conf, --reindex, ...) explained too.
func TestDocsConfigurationMatchesFlags(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	checkDocumentedKeys(t, "docs/configuration.md", referenceKeyEntry.FindAllStringSubmatch(doc, -1))

	var help bytes.Buffer
	if _, err := loadConfig([]string{"--help"}, nil, &help); !errors.Is(err, errHelp) {
		t.Fatalf("--help: %v", err)
	}
	keys := map[string]bool{}
	for _, k := range configKeys() {
		keys[k.Name] = true
	}
	for _, m := range helpFlag.FindAllStringSubmatch(help.String(), -1) {
		if keys[m[1]] {
			continue
		}
		if !regexp.MustCompile(`--` + m[1] + `\b`).MatchString(doc) {
			t.Errorf("docs/configuration.md does not explain --%s, which --help names", m[1])
		}
	}
}
