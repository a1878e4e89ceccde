// Command matrixdriver is the Go client at each door of the matrix
// (test/matrix/run.ts): for each entity of $MATRIX_ENTITIES (key=secret;…) a
// take of $TAKE ids (business numbers, with TakeNumbers, for the keys of
// $MATRIX_NUMBERS), then $LEASED leased ids, one line each on stdout:
// `ids KEY DOOR ID…`, `refused KEY DOOR STATUS CODE` (the service's answer),
// or `error KEY DOOR MESSAGE` (anything else the client returned). The same
// protocol as the Java and Python drivers beside it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	idpool "github.com/idpool/idpool/clients/go"
)

func decimals(ids []int64) []string {
	words := make([]string, len(ids))
	for i, id := range ids {
		words[i] = strconv.FormatInt(id, 10)
	}
	return words
}

func answer(key, door string, ids []string, err error) {
	var httpErr *idpool.HTTPError
	switch {
	case err == nil:
		fmt.Println("ids", key, door, strings.Join(ids, " "))
	case errors.As(err, &httpErr):
		fmt.Println("refused", key, door, httpErr.Status, httpErr.Code)
	default:
		fmt.Println("error", key, door, strings.ReplaceAll(err.Error(), "\n", " "))
	}
}

func leased(c *idpool.Client, key string, n int) ([]string, error) {
	l := c.Leased(key)
	out := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		id, err := l.Next()
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return decimals(out), nil
}

func take(c *idpool.Client, key string, n int, number bool) ([]string, error) {
	if number {
		return c.TakeNumbers(context.Background(), key, n)
	}
	ids, err := c.Take(context.Background(), key, n)
	return decimals(ids), err
}

func main() {
	secrets := map[string]string{}
	var keys []string
	for _, e := range strings.Split(os.Getenv("MATRIX_ENTITIES"), ";") {
		kv := strings.SplitN(e, "=", 2)
		secrets[kv[0]] = kv[1]
		keys = append(keys, kv[0])
	}
	numbers := map[string]bool{}
	for _, k := range strings.Split(os.Getenv("MATRIX_NUMBERS"), ",") {
		numbers[k] = true
	}
	count, _ := strconv.Atoi(os.Getenv("TAKE"))
	n, _ := strconv.Atoi(os.Getenv("LEASED"))
	// A 5 s deadline: a cell waiting longer fails (issue 45).
	c, err := idpool.New(idpool.Options{
		Endpoints: []string{os.Getenv("MATRIX_URL")},
		Secrets:   secrets,
		Deadline:  5 * time.Second,
		Lease:     idpool.LeaseOptions{Wait: 5 * time.Second},
	})
	if err != nil {
		fmt.Println("error - options", err)
		os.Exit(1)
	}
	defer c.Close()
	for _, key := range keys {
		ids, err := take(c, key, count, numbers[key])
		answer(key, "take", ids, err)
		ids, err = leased(c, key, n)
		answer(key, "leased", ids, err)
	}
}
