// Starts GraphiQL on the gateway's page. The endpoint comes from the page
// (data-endpoint); requests are POSTs of JSON to it, same origin, so the
// page's Content-Security-Policy (connect-src 'self') allows them.
(function () {
  'use strict';
  var root = document.getElementById('graphiql');
  var endpoint = root.getAttribute('data-endpoint');

  // fetcher sends one GraphQL request. Headers typed in GraphiQL's
  // Headers tab (such as Authorization: Bearer <token>) are added; a body
  // that is not JSON (a proxy's error page) is shown as an error.
  function fetcher(params, opts) {
    var headers = new Headers({
      'Content-Type': 'application/json',
      'Accept': 'application/graphql-response+json, application/json'
    });
    var extra = (opts && opts.headers) || {};
    Object.keys(extra).forEach(function (name) { headers.set(name, extra[name]); });
    return fetch(endpoint, {
      method: 'POST',
      headers: headers,
      body: JSON.stringify(params),
      credentials: 'same-origin'
    }).then(function (res) {
      return res.text().then(function (text) {
        try {
          return JSON.parse(text);
        } catch (e) {
          return { errors: [{ message: 'HTTP ' + res.status + ' ' + res.statusText + ', not a GraphQL response: ' + text.slice(0, 500) }] };
        }
      });
    });
  }

  var defaultQuery = [
    '# The GopherEats gateway. Ctrl-Enter runs the query; the Docs button',
    '# shows the schema. Fields that need a user (order, placeOrder,',
    '# submitReview, personal recommendations) want a header, set in the',
    '# Headers tab below: {"Authorization": "Bearer tok-alice"} (or tok-bob,',
    '# tok-carol: the test users).',
    '',
    '{',
    '  restaurants {',
    '    id',
    '    name',
    '  }',
    '}',
    ''
  ].join('\n');

  root.textContent = '';
  ReactDOM.createRoot(root).render(React.createElement(GraphiQL, {
    fetcher: fetcher,
    defaultQuery: defaultQuery,
    isHeadersEditorEnabled: true,
    shouldPersistHeaders: false
  }));
})();
