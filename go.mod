module github.com/gophereats/resilience

go 1.25

require (
	github.com/go-chi/chi/v5 v5.5.0
	github.com/stretchr/testify v1.12.1
	github.com/vektah/gqlparser/v2 v2.5.64
)

require (
	github.com/agnivade/levenshtein v1.2.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
