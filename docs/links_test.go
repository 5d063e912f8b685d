// Package docs holds the repository's documentation; its one test checks
// that every relative link of every Markdown file resolves (issue 48).
package docs

import (
	"bufio"
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestRelativeLinksResolve reads every Markdown file of the repository (the
// tracked ones and those not yet added, as git lists them), and fails for
// every link or image whose relative target is missing, and for every
// #anchor, into a Markdown file or within one, that names no heading of it
// (GitHub's slugs). Links to other sites, and anything inside code, are not
// checked.
func TestRelativeLinksResolve(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := markdownFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no Markdown files found")
	}
	anchors := map[string]map[string]bool{} // absolute path of a .md file -> its anchors
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(b)
		anchors[path] = a
		return a, nil
	}
	checked := 0
	for _, rel := range files {
		path := filepath.Join(root, rel)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		for _, l := range markdownLinks(b) {
			checked++
			target, anchor, ok := splitTarget(l.target)
			if !ok {
				continue // another site, or a scheme such as mailto:
			}
			dest := path
			if target != "" {
				if strings.HasPrefix(target, "/") {
					dest = filepath.Join(root, filepath.FromSlash(target))
				} else {
					dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(target))
				}
				if !strings.HasPrefix(dest+string(filepath.Separator), root+string(filepath.Separator)) {
					t.Errorf("%s:%d: link %q leaves the repository", rel, l.line, l.target)
					continue
				}
				fi, err := os.Stat(dest)
				if err != nil {
					t.Errorf("%s:%d: link %q: no such file or directory", rel, l.line, l.target)
					continue
				}
				if fi.IsDir() {
					continue // GitHub shows the directory; an anchor would be its README's, not checked
				}
			}
			if anchor == "" || !strings.HasSuffix(strings.ToLower(dest), ".md") {
				continue // line anchors (#L10) of source files are GitHub's, not checked
			}
			a, err := anchorsOf(dest)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", rel, l.line, l.target, err)
				continue
			}
			if !a[strings.ToLower(anchor)] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", rel, l.line, l.target, relTo(root, dest), anchor)
			}
		}
	}
	t.Logf("%d links in %d Markdown files", checked, len(files))
}

func relTo(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

// markdownFiles lists the repository's Markdown files relative to root:
// git's tracked and untracked-but-not-ignored ones, or, without git, every
// .md file outside hidden directories.
func markdownFiles(t *testing.T, root string) []string {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.md")
	cmd.Dir = root
	out, err := cmd.Output()
	var files []string
	if err == nil {
		seen := map[string]bool{}
		for _, f := range strings.Split(string(out), "\x00") {
			if f == "" || seen[f] {
				continue
			}
			seen[f] = true
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				continue // deleted in the work tree, not yet in the index
			}
			files = append(files, f)
		}
	} else {
		t.Logf("git ls-files: %v; walking the tree instead", err)
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
				r, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				files = append(files, filepath.ToSlash(r))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(files)
	return files
}

// splitTarget splits a link's target into a path and an anchor, both
// unescaped; ok is false for targets on other sites (a scheme, or //host).
func splitTarget(raw string) (path, anchor string, ok bool) {
	if scheme.MatchString(raw) || strings.HasPrefix(raw, "//") {
		return "", "", false
	}
	path, anchor, _ = strings.Cut(raw, "#")
	path, _, _ = strings.Cut(path, "?")
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	if a, err := url.PathUnescape(anchor); err == nil {
		anchor = a
	}
	return path, anchor, true
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

type link struct {
	line   int
	target string
}

var (
	// [text](target) and ![alt](target), the text holding at most one
	// level of brackets; the target optionally in <>, optionally followed
	// by a title.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// [label]: target (a reference definition).
	refDefinition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	// An HTML anchor or image: <a href="x">, <img src="x">.
	htmlLink = regexp.MustCompile(`<(?:a|img)\s[^>]*?(?:href|src)\s*=\s*"([^"]*)"`)
	fence    = regexp.MustCompile("^\\s*(`{3,}|~{3,})")
)

// markdownLinks returns the link targets of a Markdown document, with
// their line numbers, outside fenced code blocks and inline code.
func markdownLinks(b []byte) []link {
	var links []link
	forEachTextLine(b, func(n int, line string) {
		line = stripInlineCode(line)
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			links = append(links, link{n, strings.Trim(m[1], "<>")})
		}
		if m := refDefinition.FindStringSubmatch(line); m != nil {
			links = append(links, link{n, strings.Trim(m[1], "<>")})
		}
		for _, m := range htmlLink.FindAllStringSubmatch(line, -1) {
			links = append(links, link{n, m[1]})
		}
	})
	return links
}

// forEachTextLine calls f with every line (numbered from 1) that is not in
// a fenced code block.
func forEachTextLine(b []byte, f func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	open := "" // the fence that opened the current code block
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line) == m[1]:
				open = ""
				continue
			}
		}
		if open == "" {
			f(n, line)
		}
	}
}

// stripInlineCode replaces every code span of a line with a placeholder,
// so that a link written inside one is not taken for a link, while a link
// whose text is code ([`x`](y)) still is.
func stripInlineCode(line string) string {
	var out strings.Builder
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			out.WriteString(line)
			return out.String()
		}
		j := i
		for j < len(line) && line[j] == '`' {
			j++
		}
		ticks := line[i:j]
		end := strings.Index(line[j:], ticks)
		// The closing run must be exactly as long as the opening one.
		for end >= 0 && j+end+len(ticks) < len(line) && line[j+end+len(ticks)] == '`' {
			k := j + end + len(ticks)
			for k < len(line) && line[k] == '`' {
				k++
			}
			next := strings.Index(line[k:], ticks)
			if next < 0 {
				end = -1
				break
			}
			end = k - j + next
		}
		if end < 0 {
			out.WriteString(line) // an unmatched run is literal
			return out.String()
		}
		out.WriteString(line[:i])
		out.WriteString("code")
		line = line[j+end+len(ticks):]
	}
}

var (
	atxHeading   = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextMarker = regexp.MustCompile(`^ {0,3}(?:=+|-+)[ \t]*$`)
	htmlAnchor   = regexp.MustCompile(`<a\s[^>]*?(?:name|id)\s*=\s*"([^"]+)"`)
	headingLink  = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)`)
	htmlTag      = regexp.MustCompile(`<[^>]+>`)
)

// headingAnchors returns the anchors GitHub makes for a document's
// headings (and any <a name="..."> or id="..." in it).
func headingAnchors(b []byte) map[string]bool {
	anchors := map[string]bool{}
	count := map[string]int{}
	add := func(text string) {
		s := slug(text)
		n := count[s]
		count[s]++
		if n > 0 {
			s += "-" + strconv.Itoa(n)
		}
		anchors[s] = true
	}
	prev, prevN := "", 0 // the previous text line, for setext headings
	forEachTextLine(b, func(n int, line string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[strings.ToLower(m[1])] = true
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			add(m[1])
			prev = ""
			return
		}
		if setextMarker.MatchString(line) && prevN == n-1 && isParagraph(prev) {
			add(prev)
			prev = ""
			return
		}
		prev, prevN = line, n
	})
	return anchors
}

// isParagraph reports whether a line can be the text of a setext heading
// underlined with dashes (not blank, a list item or a table row, where the
// dashes are a rule or a table's delimiter row).
func isParagraph(line string) bool {
	s := strings.TrimSpace(line)
	if s == "" || strings.HasPrefix(s, "|") || strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "* ") || strings.HasPrefix(s, ">") {
		return false
	}
	return len(line)-len(strings.TrimLeft(line, " ")) < 4
}

// slug is GitHub's anchor of a heading: the rendered text in lower case,
// every character but letters, marks, digits, '_', '-' and spaces dropped,
// and spaces turned into '-'.
func slug(heading string) string {
	text := headingLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case unicode.IsLetter(r), unicode.IsMark(r), unicode.IsDigit(r), r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
