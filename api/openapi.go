package api

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// buildOpenAPI generates the OpenAPI document of one surface from the route
// table and the Go types of queries, bodies and responses (schemas by huma).
func (s *Server) buildOpenAPI(surface Surface) ([]byte, error) {
	registry := huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)
	title, prefix := "Lore Client API", surfacePrefixes[Client][0]
	desc := "Public, read-only API: published sites, documents, trees, files and the AI chat. No authentication."
	if surface == Admin {
		title, prefix = "Lore Admin API", surfacePrefixes[Admin][0]
		desc = "Management API. Every operation except users:login and health needs `Authorization: Bearer <JWT>`."
	}
	oapi := &huma.OpenAPI{
		OpenAPI: "3.1.0",
		Info:    &huma.Info{Title: title, Version: "1.0.0", Description: desc},
		Servers: []*huma.Server{{URL: prefix}},
		Components: &huma.Components{
			Schemas: registry,
			SecuritySchemes: map[string]*huma.SecurityScheme{
				"bearer": {Type: "http", Scheme: "bearer", BearerFormat: "JWT"},
			},
		},
	}
	for _, r := range s.routes {
		if r.Surface != surface {
			continue
		}
		oapi.AddOperation(s.operation(registry, r))
	}
	requiredFromValidation(registry)
	return json.Marshal(oapi)
}

// requiredFromValidation makes a schema's required list say what the API
// enforces: the fields whose validate tag has "required" (huma would
// otherwise mark every field without omitempty as required).
func requiredFromValidation(reg huma.Registry) {
	for name, schema := range reg.Map() {
		t := reg.TypeFromRef("#/components/schemas/" + name)
		if t == nil {
			continue
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			continue
		}
		var req []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			jsonName := strings.Split(f.Tag.Get("json"), ",")[0]
			if jsonName == "" || jsonName == "-" {
				continue
			}
			if strings.Contains(","+f.Tag.Get("validate")+",", ",required,") {
				req = append(req, jsonName)
			}
		}
		if schema.Properties != nil && !isResponseType(t) {
			schema.Required = req
		}
	}
}

// isResponseType reports types without validation tags at all (responses),
// whose fields are always present and stay required.
func isResponseType(t reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("validate") != "" {
			return false
		}
	}
	return true
}

func (s *Server) operation(reg huma.Registry, r Route) *huma.Operation {
	path := strings.ReplaceAll(r.Path, "+}", "}")
	op := &huma.Operation{
		OperationID: operationID(r.Method, path),
		Method:      r.Method,
		Path:        path,
		Summary:     r.Summary,
		Description: r.Description,
		Tags:        []string{r.Tag},
		Responses:   map[string]*huma.Response{},
	}
	if r.Surface == Admin && r.Perm != Public {
		op.Security = []map[string][]string{{"bearer": {}}}
		// The least role, and how the handler limits those below the
		// platform admin (README "Roles").
		op.Extensions = map[string]any{"x-lore-least-role": leastRoleName[r.Perm]}
		if sc := RouteScope(r); sc != ScopeNone {
			op.Extensions["x-lore-scope"] = sc
		}
	}
	for _, m := range paramRe.FindAllStringSubmatch(r.Path, -1) {
		op.Parameters = append(op.Parameters, &huma.Param{
			Name: m[1], In: "path", Required: true, Schema: &huma.Schema{Type: "string"},
		})
	}
	if r.Query != nil {
		op.Parameters = append(op.Parameters, queryParams(reg, reflect.TypeOf(r.Query))...)
	}
	if r.Body != nil {
		ct := "application/json"
		if r.Multipart {
			ct = "multipart/form-data"
		}
		op.RequestBody = &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
			ct: {Schema: reg.Schema(reflect.TypeOf(r.Body), true, op.OperationID+"Body")},
		}}
	}
	okStatus := "200"
	if r.Created {
		okStatus = "201"
	}
	switch {
	case r.Raw != "":
		op.Responses[okStatus] = &huma.Response{Description: "raw " + r.Raw, Content: map[string]*huma.MediaType{r.Raw: {}}}
	default:
		data := &huma.Schema{}
		if r.Response != nil {
			data = reg.Schema(reflect.TypeOf(r.Response), true, op.OperationID+"Data")
		}
		op.Responses[okStatus] = &huma.Response{Description: "success envelope", Content: map[string]*huma.MediaType{
			"application/json": {Schema: envelopeSchema(data)},
		}}
	}
	op.Responses["default"] = &huma.Response{Description: "error envelope: code is the HTTP status",
		Content: map[string]*huma.MediaType{"application/json": {Schema: envelopeSchema(&huma.Schema{})}}}
	return op
}

func envelopeSchema(data *huma.Schema) *huma.Schema {
	return &huma.Schema{Type: "object", Properties: map[string]*huma.Schema{
		"code": {Type: "integer", Description: "0 on success, the HTTP status on error"},
		"msg":  {Type: "string"},
		"data": data,
	}, Required: []string{"code", "msg", "data"}}
}

func queryParams(reg huma.Registry, t reflect.Type) []*huma.Param {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []*huma.Param
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, queryParams(reg, f.Type)...)
			continue
		}
		name := f.Tag.Get("query")
		if name == "" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		out = append(out, &huma.Param{
			Name: name, In: "query", Description: f.Tag.Get("doc"),
			Required: strings.Contains(f.Tag.Get("validate"), "required"),
			Schema:   reg.Schema(ft, false, name),
		})
	}
	return out
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	up := true
	for _, r := range path {
		switch {
		case r == '/' || r == ':' || r == '{' || r == '}' || r == '-' || r == '_':
			up = true
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
