package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-playground/validator/v10"
	"github.com/gofiber/fiber/v2"
)

var validate = func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		for _, tag := range []string{"json", "query"} {
			if name := strings.Split(f.Tag.Get(tag), ",")[0]; name != "" && name != "-" {
				return name
			}
		}
		return f.Name
	})
	// pwbytes: bcrypt hashes at most 72 bytes; a longer password (easily
	// reached in characters outside ASCII) is a 422, not a hashing error.
	_ = v.RegisterValidation("pwbytes", func(fl validator.FieldLevel) bool { return len(fl.Field().String()) <= 72 })
	return v
}()

// bindQuery fills the query-tagged fields of dst (a pointer to struct, with
// embedded structs) from the query string and validates them. A value of the
// wrong type is a 422 naming the parameter.
func bindQuery(c *fiber.Ctx, dst any) error {
	if err := fillQuery(c, reflect.ValueOf(dst).Elem()); err != nil {
		return err
	}
	return validationError(validate.Struct(dst))
}

func fillQuery(c *fiber.Ctx, v reflect.Value) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		fv := v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := fillQuery(c, fv); err != nil {
				return err
			}
			continue
		}
		name := f.Tag.Get("query")
		if name == "" {
			continue
		}
		raw := c.Query(name)
		if raw == "" {
			continue
		}
		if strings.ContainsRune(raw, 0) {
			return Invalid("%s: NUL characters are not allowed", name)
		}
		if err := setValue(fv, raw); err != nil {
			return Invalid("%s: invalid value %q (%s expected)", name, truncate(raw, 40), kindName(f.Type))
		}
	}
	return nil
}

func setValue(fv reflect.Value, raw string) error {
	if fv.Kind() == reflect.Pointer {
		nv := reflect.New(fv.Type().Elem())
		if err := setValue(nv.Elem(), raw); err != nil {
			return err
		}
		fv.Set(nv)
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(raw)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return err
		}
		fv.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return err
		}
		fv.SetFloat(n)
	case reflect.Bool:
		switch strings.ToLower(raw) {
		case "1", "true", "yes", "on":
			fv.SetBool(true)
		case "0", "false", "no", "off":
			fv.SetBool(false)
		default:
			return errors.New("bool")
		}
	default:
		return fmt.Errorf("unsupported kind %s", fv.Kind())
	}
	return nil
}

func kindName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer"
	case reflect.Bool:
		return "boolean"
	case reflect.Float64:
		return "number"
	}
	return t.Kind().String()
}

// loadThenBind opens a handler that acts on one stored thing: it loads the
// thing the path names (a failed load, a 403 or 404, answers before the
// request is read), then reads the request into in with bind (bindJSON,
// bindQuery or listPage).
func loadThenBind[T any](c *fiber.Ctx, load func(*fiber.Ctx) (T, error), bind func(*fiber.Ctx, any) error, in any) (T, error) {
	t, err := load(c)
	if err != nil {
		return t, err
	}
	return t, bind(c, in)
}

// loadThenBindAs is loadThenBind for a loader that checks a permission.
func loadThenBindAs[T any](c *fiber.Ctx, load func(*fiber.Ctx, Perm) (T, error), need Perm, bind func(*fiber.Ctx, any) error, in any) (T, error) {
	return loadThenBind(c, func(c *fiber.Ctx) (T, error) { return load(c, need) }, bind, in)
}

// bindJSON decodes the JSON body into dst and validates it. Malformed JSON,
// wrong types and rule violations are 422 naming the field, as the
// reference answers. Client bodies are strict (an unknown field is a 422:
// WIRE §3 forbids extra fields on chat requests); admin bodies ignore
// fields they do not know, logged at debug, because the reference's admin
// sends its own (a site's bot_config sections, EE fields) with every save.
func bindJSON(c *fiber.Ctx, dst any) error {
	if !strings.HasPrefix(c.Path(), "/admin/") || !knowsAnyKey(c.Body(), reflect.TypeOf(dst).Elem()) {
		// A body none of whose keys the route knows is a mistake, not a
		// newer client: strict, so the 422 names the field.
		return bindJSONBody(c.Body(), dst)
	}
	err := bindJSONMode(c.Body(), dst, false)
	if err == nil && slog.Default().Enabled(c.UserContext(), slog.LevelDebug) {
		probe := reflect.New(reflect.TypeOf(dst).Elem()).Interface()
		if perr := bindJSONMode(c.Body(), probe, true); perr != nil && strings.Contains(perr.Error(), "unknown field") {
			slog.Debug("ignored unknown body field", "path", c.Path(), "field", perr.Error())
		}
	}
	return err
}

// knowsAnyKey reports whether a JSON object body has at least one top-level
// key that the struct type t (embedded structs included) decodes.
func knowsAnyKey(body []byte, t reflect.Type) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || t.Kind() != reflect.Struct {
		return false
	}
	var has func(t reflect.Type) bool
	has = func(t reflect.Type) bool {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				if has(f.Type) {
					return true
				}
				continue
			}
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "" {
				name = f.Name
			}
			for k := range top {
				if name != "-" && strings.EqualFold(k, name) {
					return true
				}
			}
		}
		return false
	}
	return has(t)
}

// bindJSONBody is the strict bindJSON for a body at hand.
func bindJSONBody(body []byte, dst any) error { return bindJSONMode(body, dst, true) }

func bindJSONMode(body []byte, dst any, strict bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return Invalid("request body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return Invalid("malformed JSON: trailing data after the body")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Invalid("malformed JSON: trailing data after the body")
	}
	// PostgreSQL cannot store NUL in text: refuse it in every string field.
	if field := findNUL(reflect.ValueOf(dst), ""); field != "" {
		return Invalid("%s: NUL characters are not allowed", field)
	}
	return validationError(validate.Struct(dst))
}

func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var synErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		want := typeErr.Type.String()
		if typeErr.Type.Kind() == reflect.Map {
			want = "a JSON object"
		}
		return Invalid("%s: must be %s, got %s", field, want, typeErr.Value)
	case errors.As(err, &synErr), errors.Is(err, io.ErrUnexpectedEOF):
		return Invalid("malformed JSON: %v", err)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return Invalid("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return Invalid("invalid body: %v", err)
}

func validationError(err error) error {
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) || len(verrs) == 0 {
		return Invalid("validation failed: %v", err)
	}
	fe := verrs[0]
	field := fe.Field()
	switch fe.Tag() {
	case "required":
		return Invalid("%s: field required", field)
	case "min", "gte":
		return Invalid("%s: must be at least %s", field, fe.Param())
	case "max", "lte":
		return Invalid("%s: must be at most %s", field, fe.Param())
	case "oneof":
		return Invalid("%s: must be one of [%s]", field, fe.Param())
	case "email":
		return Invalid("%s: not a valid email address", field)
	case "pwbytes":
		return Invalid("%s: at most 72 bytes in UTF-8 (the password hash's limit)", field)
	}
	return Invalid("%s: failed rule %q", field, fe.Tag())
}

// pathInt parses a numeric path parameter; a non-number is 422.
func pathInt(c *fiber.Ctx, name string) (int64, error) {
	raw := c.Params(name)
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 {
		return 0, Invalid("%s: invalid id %q", name, truncate(raw, 40))
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// findNUL returns the JSON path of the first string in v containing a NUL.
func findNUL(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return ""
		}
		return findNUL(v.Elem(), path)
	case reflect.String:
		if strings.ContainsRune(v.String(), 0) {
			if path == "" {
				return "body"
			}
			return path
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
			if name == "" || name == "-" {
				name = t.Field(i).Name
			}
			if t.Field(i).Anonymous {
				name = ""
			}
			if p := findNUL(v.Field(i), joinPath(path, name)); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if bytes.IndexByte(v.Bytes(), 0) >= 0 || bytes.Contains(v.Bytes(), []byte(`\u0000`)) {
				return joinPath(path, "")
			}
			return ""
		}
		for i := 0; i < v.Len(); i++ {
			if p := findNUL(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if p := findNUL(v.MapIndex(k), joinPath(path, fmt.Sprint(k.Interface()))); p != "" {
				return p
			}
		}
	}
	return ""
}

func joinPath(a, b string) string {
	switch {
	case a == "":
		if b == "" {
			return "body"
		}
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

// isBlankRune: Unicode space and format characters (a zero-width space, a
// BOM) count as blank.
func isBlankRune(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) }

// requiredTitle trims a title and refuses a blank one (422), see isBlankRune.
func requiredTitle(t string) (string, error) {
	t = strings.TrimFunc(t, isBlankRune)
	if t == "" {
		return "", Invalid("title: must not be blank")
	}
	return t, nil
}

// optionalTitle is requiredTitle for the title an update may give: *t is
// left nil when it gives none, else replaced by the trimmed title.
func optionalTitle(t **string) error {
	if *t == nil {
		return nil
	}
	v, err := requiredTitle(**t)
	if err != nil {
		return err
	}
	*t = &v
	return nil
}
