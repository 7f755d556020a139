package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
)

// pathTag marks a Config field that holds a file or directory path: `~`
// and $HOME are expanded in it after every source (file, environment,
// flags) is applied. A key added later gets the same treatment by carrying
// the tag.
const pathTag = "path"

// homeRef matches $HOME and ${HOME}, not $HOMEDIR.
var homeRef = regexp.MustCompile(`\$\{HOME\}|\$HOME\b`)

// expandPath expands a leading `~` or `~/` and every $HOME or ${HOME} in p
// to home. `~user` is refused rather than guessed at.
func expandPath(p, home string) (string, error) {
	needsHome := p == "~" || strings.HasPrefix(p, "~/") || homeRef.MatchString(p)
	if strings.HasPrefix(p, "~") && !(p == "~" || strings.HasPrefix(p, "~/")) {
		return "", fmt.Errorf("%q: ~user is not supported; write the full path", p)
	}
	if !needsHome {
		return p, nil
	}
	if home == "" {
		return "", fmt.Errorf("%q: cannot expand ~ or $HOME: no home directory (set HOME)", p)
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = home + p[1:]
	}
	return homeRef.ReplaceAllLiteralString(p, home), nil
}

// expandPaths expands every field of c tagged path:"true".
func (c *Config) expandPaths(home string) error {
	v := reflect.ValueOf(c).Elem()
	for _, k := range configKeys() {
		if !k.Path {
			continue
		}
		f := v.Field(k.Index)
		p, err := expandPath(f.String(), home)
		if err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
		f.SetString(p)
	}
	return nil
}

// homeDir is $HOME from the environment cfindexd was given, falling back
// to the user database; empty when neither knows.
func homeDir(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return h
}

// fileExists reports whether path names an existing file (not a
// directory); errors other than "does not exist" are returned, so that an
// unreadable default config file is not silently skipped.
func fileExists(path string) (bool, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return !st.IsDir(), nil
}
