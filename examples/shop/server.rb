# frozen_string_literal: true

# The shop app as a running server, for the attach demo: a plain HTTP/1.1 server on TCPServer
# (one request per connection), so that the demo needs no web server gem. It never requires
# memprof.
#   ruby examples/shop/server.rb [PORT]   (0: any free port; prints "listening on PORT")
require "socket"
require "rack/mock"
require_relative "app"

app = Shop::App.new
server = TCPServer.new("127.0.0.1", Integer(ARGV.fetch(0, "0")))
$stdout.sync = true
puts "listening on #{server.addr[1]}"

loop do
  client = server.accept
  request_line = client.gets.to_s
  # Headers are read and ignored; requests have no body.
  while (line = client.gets) && line != "\r\n"; end
  _, target = request_line.split(" ", 3)
  status, headers, body = app.call(Rack::MockRequest.env_for(target || "/"))
  text = +""
  body.each { |chunk| text << chunk }
  client.write("HTTP/1.1 #{status} OK\r\ncontent-length: #{text.bytesize}\r\n" \
               "content-type: #{headers['content-type']}\r\nconnection: close\r\n\r\n#{text}")
rescue StandardError => e
  warn "server: #{e.class}: #{e.message}"
ensure
  client&.close
end
