// Package admin is the admin command: it turns "admin fault payment=hang",
// "admin load 20" and the like into one request to the running system's
// admin API (127.0.0.1:8080 unless -addr says otherwise), so that no shell
// has to quote JSON, and prints the answer.
//
// It knows the admin API's routes and nothing of the repository or labs.
package admin
