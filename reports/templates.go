package reports

import (
	"embed"
	"html/template"

	"github.com/lockchaos/lockchaos/history"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed style.css
var styleSource string

// styleCSS is inlined into every page: one file per page, nothing fetched.
var styleCSS = template.CSS(styleSource)

// Style returns the reports' stylesheet, for other pages that link to the reports (explore's) and
// must look like them while staying one self-contained file.
func Style() template.CSS { return styleCSS }

var pageTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"f1":      f1,
	"fmtMs":   history.FormatMs,
	"fmtDur":  history.FormatNs,
	"explain": classExplanation,
	"deref": func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	},
}).ParseFS(templateFS, "templates/*.html"))
