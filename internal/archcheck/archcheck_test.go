package archcheck

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	module = "github.com/cfindexd/cfindexd"
	// maxFileLines and maxPackageLines are the sizes docs/architecture.md
	// promises: about 500 lines a file and 3,500 a package, non-test code.
	maxFileLines    = 550
	maxPackageLines = 3600
)

// rule is one row of the package map: the packages it names and the
// in-module packages their non-test code may import.
type rule struct {
	anything bool
	allowed  []string // exact paths, or "p2p/*" for any subpackage of p2p
}

func (r rule) allows(pkg string) bool {
	if r.anything {
		return true
	}
	for _, a := range r.allowed {
		if a == pkg || (strings.HasSuffix(a, "/*") && strings.HasPrefix(pkg, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readMap parses the package-map tables of docs/architecture.md: rows whose
// first cell names packages in backticks and whose third cell says what they
// may import ("anything", "—", or backticked packages).
func readMap(t *testing.T, path string) map[string]rule {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rules := map[string]rule{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			continue
		}
		var r rule
		switch imports := strings.TrimSpace(cells[2]); imports {
		case "anything":
			r.anything = true
		case "—":
		default:
			for _, m := range backticked.FindAllStringSubmatch(imports, -1) {
				r.allowed = append(r.allowed, m[1])
			}
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			if _, dup := rules[m[1]]; dup {
				t.Errorf("%s names %s twice", path, m[1])
			}
			rules[m[1]] = r
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rules
}

type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

func listPackages(t *testing.T, root string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestArchitectureMapMatchesCode: the package map in docs/architecture.md
// names every package, allows every import the code makes (and so forbids
// the rest), and the code stays within the sizes it promises.
func TestArchitectureMapMatchesCode(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rules := readMap(t, filepath.Join(root, "docs", "architecture.md"))
	if len(rules) < 20 {
		t.Fatalf("docs/architecture.md: read only %d packages from the map", len(rules))
	}
	pkgs := listPackages(t, root)
	seen := map[string]bool{}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		seen[rel] = true
		r, ok := rules[rel]
		if !ok {
			t.Errorf("package %s is not in docs/architecture.md's map", rel)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			if !r.allows(dep) {
				t.Errorf("%s imports %s, which docs/architecture.md does not allow it", rel, dep)
			}
		}
		total := 0
		for _, f := range p.GoFiles {
			n := countLines(t, filepath.Join(p.Dir, f))
			total += n
			if n > maxFileLines {
				t.Errorf("%s/%s has %d lines (at most about 500)", rel, f, n)
			}
		}
		if total > maxPackageLines {
			t.Errorf("package %s has %d non-test lines (at most about 3,500)", rel, total)
		}
	}
	var stale []string
	for name := range rules {
		if !seen[name] {
			stale = append(stale, name)
		}
	}
	slices.Sort(stale)
	for _, name := range stale {
		t.Errorf("docs/architecture.md names %s, which is no package of the module", name)
	}
}
