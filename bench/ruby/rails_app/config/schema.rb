# frozen_string_literal: true

ActiveRecord::Schema.define do
  create_table :authors do |t|
    t.string :name, null: false
    t.string :email, null: false
  end

  create_table :posts do |t|
    t.references :author, null: false
    t.string :title, null: false
    t.text :body, null: false
    t.integer :views, null: false, default: 0
    t.timestamps
  end

  create_table :comments do |t|
    t.references :post, null: false
    t.string :commenter, null: false
    t.text :body, null: false
    t.timestamps
  end
end
