# Writes an ObjectSpace.dump_all file of a small Rails 6.1 application (Debian's ruby-rails)
# after it served requests, with allocation tracing on: a heap as real apps have it (thousands
# of classes, gems, callbacks), for the side-by-side benchmark against heapy.
#
#   ruby make_rails_dump.rb OUT.json [REQUESTS] [--production]
#
# By default the app loads ActionController only and lazily, as in development. --production
# boots it as production does: every framework (require "rails/all": Active Record, Active
# Storage, Action Mailer, ...) and eager_load, so all of their code is compiled before the
# first request: a heap 1.6x larger, mostly instruction sequences (IMEMO objects).
require "objspace"
require "logger"
require "tmpdir"
require "fileutils"

out = ARGV.fetch(0)
requests = Integer(ARGV.fetch(1, "500"))
production = ARGV.include?("--production")

if production
  ENV["RAILS_ENV"] = "production"
  require "rails/all"
else
  require "rails"
  require "action_controller/railtie"
end
require "rack/mock"

root = Dir.mktmpdir("memprof-rails-dump")
at_exit { FileUtils.remove_entry(root) }
if production
  # The configuration files rails/all reads at boot: an in-memory database, local storage.
  FileUtils.mkdir_p(File.join(root, "config"))
  File.write(File.join(root, "config/database.yml"), "production:\n  adapter: sqlite3\n  database: \":memory:\"\n")
  File.write(File.join(root, "config/storage.yml"), "local:\n  service: Disk\n  root: #{root}/storage\n")
end

class BenchApp < Rails::Application
  config.logger = Logger.new(nil)
  config.secret_key_base = "memprof-bench"
  config.hosts.clear
  routes.append { get "/items/:id" => "items#show" }
end
BenchApp.config.root = root
BenchApp.config.eager_load = production
BenchApp.config.active_storage.service = :local if production

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
