# Writes an ObjectSpace.dump_all file of a small Rails 6.1 application (Debian's ruby-rails)
# after it served requests, with allocation tracing on: a heap as real apps have it (thousands
# of classes, gems, callbacks), for the side-by-side benchmark against heapy.
#
#   ruby make_rails_dump.rb OUT.json [REQUESTS]
require "rails"
require "action_controller/railtie"
require "rack/mock"
require "objspace"
require "logger"

out = ARGV.fetch(0)
requests = Integer(ARGV.fetch(1, "500"))

class BenchApp < Rails::Application
  config.eager_load = false
  config.logger = Logger.new(nil)
  config.secret_key_base = "memprof-bench"
  config.hosts.clear
  routes.append { get "/items/:id" => "items#show" }
end

class ItemsController < ActionController::Base
  CACHE = {}

  def show
    item = { id: params[:id], name: "item #{params[:id]}", tags: %w[a b c].map { |t| "#{t}-#{params[:id]}" } }
    CACHE[params[:id]] = item  # the leak the dump should show
    render json: item
  end
end

BenchApp.initialize!
ObjectSpace.trace_object_allocations_start
requests.times { |i| Rack::MockRequest.new(BenchApp).get("/items/#{i}") }
GC.start
File.open(out, "w") { |f| ObjectSpace.dump_all(output: f) }
