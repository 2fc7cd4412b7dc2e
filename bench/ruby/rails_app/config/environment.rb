# frozen_string_literal: true

require_relative "application"

Rails.application.initialize!
ActiveRecord::Migration.verbose = false
require_relative "schema"
require_relative "routes"
require_relative "seeds"
